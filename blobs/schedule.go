package blobs

import (
	"strconv"
	"sync"
	"time"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
)

// Bounds of the automatic fetches (ADR 0029, "Who makes the node fetch":
// "a queue of 1024 of which one peer's events hold at most a quarter,
// further blobs dropped and counted"; "retried after 30 s, 1, 2 and 4
// min").
const (
	// QueueLen is how many blobs wait to be auto-fetched at most (not
	// counting those being fetched); past it new ones are dropped. It also
	// bounds the retries waiting for their time.
	QueueLen = 1024

	// PeerShare is how many blobs one peer's events (Job.From) may hold,
	// waiting or being fetched: a quarter of QueueLen, so that one peer's
	// flood leaves three quarters to the others.
	PeerShare = QueueLen / 4

	// MaxRetries is how many times a blob whose fetch found no provider
	// that served it is tried again, after RetryDelay of its failures
	// (BackoffDelay: 30 s, 1 min, 2 min, 4 min): long enough for a
	// provider's backoff to end, or for another to be named.
	MaxRetries = 4
)

// Job is one blob to fetch in the background: named by an event that came
// by gossip or sync. Its providers are its Guesses; the worker that runs
// it adds the hints of the moment (Sources.Named) when it builds the
// fetch's Sources.
type Job struct {
	// CID is the blob's root and Size its declared size in bytes.
	CID  cid.Cid
	Size uint64
	// From is the peer the event came from (the gossip relay, the sync
	// peer); its jobs hold at most PeerShare places. "" counts against
	// no share.
	From peer.ID
	// Guesses are the fetch's Sources.Guesses: the event's author and the
	// peer it came from, never backed off (ADR 0029).
	Guesses []peer.ID
	// Source names what made the job ("gossip", "sync"), for the caller's
	// logs and metrics; the scheduler does not read it.
	Source string
	// Tries counts the fetches of it that failed so far (0 for a new job,
	// 1..MaxRetries for a retry).
	Tries int
}

// Verdict is what the Scheduler did with a job.
type Verdict uint8

// The verdicts of Add (and of the retries Due readmits), then of Done.
const (
	// Queued: the job waits in the queue.
	Queued Verdict = iota
	// Duplicate: its blob waits or is being fetched already; dropped.
	Duplicate
	// ShareFull: its From holds PeerShare jobs already; dropped.
	ShareFull
	// QueueFull: QueueLen jobs wait already; dropped.
	QueueFull
	// Finished: Done forgot the job (a success, or no retry asked).
	Finished
	// Retrying: Done scheduled a retry; Due readmits it at its time.
	Retrying
	// NoRetriesLeft: Done was asked for a retry after MaxRetries; the job
	// is forgotten (the next start's scan looks at the blob again).
	NoRetriesLeft
	// RetriesFull: Done was asked for a retry while QueueLen retries wait;
	// the job is forgotten.
	RetriesFull
)

var verdictNames = [...]string{"queued", "duplicate", "share full", "queue full", "finished", "retrying", "no retries left", "retries full"}

// String names v in lower case ("share full"), or "verdict(N)".
func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return "verdict(" + strconv.Itoa(int(v)) + ")"
}

// Dropped reports whether v turned a job away for want of room (ShareFull,
// QueueFull): the blob is not fetched now, which callers count.
func (v Verdict) Dropped() bool { return v == ShareFull || v == QueueFull }

// Admission is a retry that Due readmitted, with Add's verdict on it.
type Admission struct {
	Job     Job
	Verdict Verdict
}

// ScheduleOptions configures NewScheduler.
type ScheduleOptions struct {
	// RetryDelay is the wait before the tries-th retry (1..MaxRetries).
	// Nil means BackoffDelay (30 s, 1 min, 2 min, 4 min).
	RetryDelay func(tries int) time.Duration
}

// EnsureDefaults sets each nil field of o to its default and returns o; on
// a nil o it returns new ScheduleOptions of the defaults.
func (o *ScheduleOptions) EnsureDefaults() *ScheduleOptions {
	if o == nil {
		o = &ScheduleOptions{}
	}
	if o.RetryDelay == nil {
		o.RetryDelay = BackoffDelay
	}
	return o
}

// Scheduler is the auto-fetch queue of ADR 0029 as a deterministic state
// machine: the jobs waiting (first in, first out, at most QueueLen), the
// share of each peer (at most PeerShare waiting or running), the blobs
// known (a blob waits or runs once), and the retries waiting for their
// time (at most QueueLen, MaxRetries a job). The caller's workers take
// jobs with Next and report them with Done; Due readmits the retries whose
// time came, and Wait says how long until the next.
//
// Time is passed in and nothing reads the clock (style: time as a value).
// The scheduler's own time advances by the forward steps of the nows it is
// given; a now earlier than the latest one counts as no time passing, so a
// clock stepping back neither delays nor hastens a retry (each waits its
// delay of forward time). A node passes time.Now, whose monotonic reading
// never steps back.
//
// A job's blob is one of three states: waiting (in the queue), running
// (Next gave it, Done not yet), retrying (Done scheduled a retry). An Add of
// a blob that is retrying replaces the retry with the new job, queued at
// once (its event may name new providers).
//
// Safe for concurrent use.
type Scheduler struct {
	retryDelay func(int) time.Duration

	mu struct {
		sync.Mutex
		// ready are the waiting jobs, oldest first (at most QueueLen).
		ready []Job
		// running holds the CIDs of the jobs Next gave and Done has not
		// seen. INVARIANT: a CID is in at most one of ready, running and
		// retries.
		running map[cid.Cid]struct{}
		// queued holds the CIDs in ready.
		queued map[cid.Cid]struct{}
		// share counts each From's jobs in ready and running; no zero
		// counts are kept.
		share map[peer.ID]int
		// retries are the jobs waiting for their retry, at their due time
		// on clock (at most QueueLen).
		retries deadlines[cid.Cid, Job]
		// clock is the scheduler's time: the first now seen, advanced by
		// every later forward step; last is the latest now seen.
		clock, last time.Time
	}
}

// NewScheduler returns an empty scheduler.
func NewScheduler(opts *ScheduleOptions) *Scheduler {
	var o ScheduleOptions
	if opts != nil {
		o = *opts
	}
	s := &Scheduler{retryDelay: o.EnsureDefaults().RetryDelay}
	s.mu.running = make(map[cid.Cid]struct{})
	s.mu.queued = make(map[cid.Cid]struct{})
	s.mu.share = make(map[peer.ID]int)
	return s
}

// Add queues j: Queued, or Duplicate (its blob waits or runs already),
// ShareFull (j.From holds PeerShare jobs) or QueueFull (QueueLen wait), in
// this order of checks; a dropped job changes nothing. A retry waiting for
// j's blob is replaced by j.
func (s *Scheduler) Add(j Job) Verdict {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addLocked(j)
}

// addLocked is Add. REQUIRES: s.mu held.
func (s *Scheduler) addLocked(j Job) Verdict {
	_, waiting := s.mu.queued[j.CID]
	_, running := s.mu.running[j.CID]
	switch {
	case waiting || running:
		return Duplicate
	case j.From != "" && s.mu.share[j.From] >= PeerShare:
		return ShareFull
	case len(s.mu.ready) >= QueueLen:
		return QueueFull
	}
	s.mu.retries.remove(j.CID)
	s.mu.ready = append(s.mu.ready, j)
	s.mu.queued[j.CID] = struct{}{}
	if j.From != "" {
		s.mu.share[j.From]++
	}
	return Queued
}

// Next takes the oldest waiting job, which runs until Done; ok is false
// when none waits. The job keeps its place in its From's share.
func (s *Scheduler) Next() (j Job, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.mu.ready) == 0 {
		return Job{}, false
	}
	j = s.mu.ready[0]
	s.mu.ready[0] = Job{}
	s.mu.ready = s.mu.ready[1:]
	delete(s.mu.queued, j.CID)
	s.mu.running[j.CID] = struct{}{}
	return j, true
}

// Done reports that the running job j (as Next gave it) ended at now.
// retry asks for it to be tried again (its fetch found no provider that
// served it); Done then schedules it RetryDelay(j.Tries+1) later
// (Retrying), unless it was tried MaxRetries times already
// (NoRetriesLeft) or QueueLen retries wait (RetriesFull). Without retry
// the job is forgotten (Finished). A Done for a job that is not running
// changes nothing and returns Finished.
func (s *Scheduler) Done(j Job, retry bool, now time.Time) Verdict {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advanceLocked(now)
	if _, ok := s.mu.running[j.CID]; !ok {
		return Finished
	}
	delete(s.mu.running, j.CID)
	if j.From != "" {
		if s.mu.share[j.From]--; s.mu.share[j.From] <= 0 {
			delete(s.mu.share, j.From)
		}
	}
	switch {
	case !retry:
		return Finished
	case j.Tries >= MaxRetries:
		return NoRetriesLeft
	case s.mu.retries.len() >= QueueLen:
		return RetriesFull
	}
	j.Tries++
	s.mu.retries.set(j.CID, s.mu.clock.Add(s.retryDelay(j.Tries)), j)
	return Retrying
}

// Due readmits, by Add's rules, the retries whose time came at now,
// earliest first, and returns each with its verdict (Queued, ShareFull or
// QueueFull: a retry dropped is forgotten, as a new job would be).
func (s *Scheduler) Due(now time.Time) []Admission {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advanceLocked(now)
	var out []Admission
	for it := s.mu.retries.first(); it != nil && !it.at.After(s.mu.clock); it = s.mu.retries.first() {
		s.mu.retries.popFirst()
		out = append(out, Admission{Job: it.val, Verdict: s.addLocked(it.val)})
	}
	return out
}

// Wait returns how long after now the next retry is due (0 if one is due
// already); ok is false when no retry waits.
func (s *Scheduler) Wait(now time.Time) (d time.Duration, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advanceLocked(now)
	it := s.mu.retries.first()
	if it == nil {
		return 0, false
	}
	return max(0, it.at.Sub(s.mu.clock)), true
}

// Len returns how many jobs wait in the queue (at most QueueLen).
func (s *Scheduler) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mu.ready)
}

// Stats returns how many jobs wait, run and wait for a retry, and how many
// of p's jobs wait or run (its share, at most PeerShare).
func (s *Scheduler) Stats(p peer.ID) (waiting, running, retrying, share int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mu.ready), len(s.mu.running), s.mu.retries.len(), s.mu.share[p]
}

// advanceLocked moves the scheduler's clock by the forward step from the
// latest now to now; a step back moves nothing. REQUIRES: s.mu held.
func (s *Scheduler) advanceLocked(now time.Time) {
	switch {
	case s.mu.last.IsZero():
		s.mu.clock = now
	case now.After(s.mu.last):
		s.mu.clock = s.mu.clock.Add(now.Sub(s.mu.last))
	}
	s.mu.last = now
}

package blobs

import (
	"context"
	"time"
)

// AutoFetchWorkers is how many blobs are auto-fetched at once (ADR 0029:
// "queued for 4 auto-fetch workers").
const AutoFetchWorkers = 4

// AutoFetchOptions configure an AutoFetch.
type AutoFetchOptions struct {
	// Schedule configures the queue (NewScheduler).
	Schedule *ScheduleOptions
	// Complete reports whether a job's blob is complete already: a job
	// for one is not queued, and a retry of one ends at no cost.
	Complete func(Job) bool
	// Fetch runs a job; retry asks for another try later (a fetch that
	// found no provider that served it).
	Fetch func(ctx context.Context, j Job) (retry bool)
	// Dropped, if set, is told of a job the queue had no room for (v is
	// ShareFull or QueueFull).
	Dropped func(j Job, v Verdict)
	// GaveUp, if set, is told of a job out of retries.
	GaveUp func(j Job)
}

// AutoFetch runs the auto-fetch queue (a Scheduler, whose are the queue,
// the peers' shares and the retries) on AutoFetchWorkers workers. Its
// timers run on time.Now, whose monotonic readings never step back.
type AutoFetch struct {
	o     AutoFetchOptions
	sched *Scheduler
	// wake tells an idle worker that a job waits. One signal pending is
	// enough: a worker that takes a job passes the signal on while more
	// wait.
	wake chan struct{}
}

// NewAutoFetch returns an AutoFetch of o, with no worker yet (Work).
func NewAutoFetch(o AutoFetchOptions) *AutoFetch {
	return &AutoFetch{o: o, sched: NewScheduler(o.Schedule), wake: make(chan struct{}, 1)}
}

// Scheduler returns the queue (for its figures).
func (a *AutoFetch) Scheduler() *Scheduler { return a.sched }

// Add queues j unless its blob is complete, and reports whether it was
// queued.
func (a *AutoFetch) Add(j Job) bool {
	if a.o.Complete != nil && a.o.Complete(j) {
		return false
	}
	return a.admitted(j, a.sched.Add(j))
}

// admitted acts on the queue's verdict on j (a new job, or a retry
// readmitted): a queued job wakes a worker; one dropped is told.
func (a *AutoFetch) admitted(j Job, v Verdict) bool {
	if v == Queued {
		a.poke()
		return true
	}
	if v.Dropped() && a.o.Dropped != nil {
		a.o.Dropped(j, v)
	}
	return false
}

// poke wakes an idle worker, unless one is woken already.
func (a *AutoFetch) poke() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// Work is one worker: until ctx is done, it readmits the retries whose
// time came, takes the oldest job waiting and runs it; with none, it
// waits for one, for the next retry's time, or for ctx.
func (a *AutoFetch) Work(ctx context.Context) {
	for {
		now := time.Now()
		for _, d := range a.sched.Due(now) {
			a.admitted(d.Job, d.Verdict)
		}
		if j, ok := a.sched.Next(); ok {
			if a.sched.Len() > 0 {
				a.poke() // another idle worker takes the next
			}
			a.run(ctx, j)
			continue
		}
		if !a.idle(ctx, now) {
			return
		}
	}
}

// idle waits for a job to be queued, for the next retry's time, or for
// ctx, and reports false at ctx's end.
func (a *AutoFetch) idle(ctx context.Context, now time.Time) bool {
	var due <-chan time.Time
	if d, ok := a.sched.Wait(now); ok {
		t := time.NewTimer(d)
		defer t.Stop()
		due = t.C
	}
	select {
	case <-ctx.Done():
		return false
	case <-a.wake:
	case <-due:
	}
	return true
}

// run fetches j and tells the queue how it went. A retry whose blob was
// completed meanwhile (by a replicate request, the API) ends at no cost.
func (a *AutoFetch) run(ctx context.Context, j Job) {
	if j.Tries > 0 && a.o.Complete != nil && a.o.Complete(j) {
		a.sched.Done(j, false, time.Now())
		return
	}
	retry := a.o.Fetch(ctx, j)
	if a.sched.Done(j, retry, time.Now()) == NoRetriesLeft && a.o.GaveUp != nil {
		a.o.GaveUp(j)
	}
}

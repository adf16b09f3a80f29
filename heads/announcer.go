package heads

import (
	"context"
	"errors"
	"time"
)

// Retries of an announcer whose stream failed (the peer reset it, or did
// not read it for WriteTimeout): after AnnounceRetryFirst, then twice as
// long each time up to AnnounceRetryMax, while the peer stays connected; a
// stream that lasted AnnounceStable starts the count over.
const (
	AnnounceRetryFirst = 5 * time.Second
	AnnounceRetryMax   = 5 * time.Minute
	AnnounceStable     = time.Minute
)

// ErrNotSpoken is what an announcer's open returns when the peer does not
// speak the heads protocol (it advertised the feature but refused the
// stream): the announcer stops for good.
var ErrNotSpoken = errors.New("heads: the peer does not speak the heads protocol")

// Announcer announces src to one peer on the streams open gives it, for as
// long as ctx lasts (the peer's connection): each stream until it fails
// (Announce), then another after a wait (AnnounceRetryFirst, doubling up
// to AnnounceRetryMax). open's error wrapping ErrNotSpoken ends it; each
// other failure is told to retry with the wait before the next (nil for
// none).
func Announcer(ctx context.Context, src Source, open func(context.Context) (Stream, func(error), error),
	retry func(err error, wait time.Duration)) {
	wait := AnnounceRetryFirst
	for ctx.Err() == nil {
		started := time.Now()
		err := announceOn(ctx, src, open)
		if ctx.Err() != nil || errors.Is(err, ErrNotSpoken) {
			return
		}
		if time.Since(started) >= AnnounceStable {
			wait = AnnounceRetryFirst
		}
		if retry != nil {
			retry(err, wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, AnnounceRetryMax)
	}
}

// announceOn opens one stream and announces on it until ctx ends or the
// stream fails; done is told how it ended (the caller resets the stream on
// an error or a ctx ended).
func announceOn(ctx context.Context, src Source, open func(context.Context) (Stream, func(error), error)) error {
	s, done, err := open(ctx)
	if err != nil {
		return err
	}
	err = Announce(ctx, s, src)
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	done(err)
	return err
}

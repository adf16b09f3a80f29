package daemon

import (
	"log/slog"
	"sync/atomic"

	sd "github.com/coreos/go-systemd/v22/daemon"
)

// The service manager's readiness protocol (sd_notify; docs/adr/0043): a
// daemon started by systemd with Type=notify (or notify-reload) tells it
// when it is ready, reloading and stopping, so that systemd starts what
// depends on it, and sends a reload (ExecReload's SIGHUP), only once the
// control API answers. Without NOTIFY_SOCKET in the environment, as
// anywhere but under systemd, each is nothing.

// started is set once Run has said the daemon is ready: a reload before
// that (a SIGHUP in the first milliseconds) says nothing, so that it does
// not call the daemon ready before it is.
var started atomic.Bool

// notifyStarted says the daemon is ready: its control API listens.
func notifyStarted(log *slog.Logger) {
	started.Store(true)
	notify(log, sd.SdNotifyReady)
}

// NotifyReloading says the daemon is reading its config again (with the
// monotonic time Type=notify-reload asks for); NotifyReloaded follows.
// Before the daemon is ready, it says nothing.
func NotifyReloading(log *slog.Logger) {
	if started.Load() {
		notify(log, sd.SdNotifyReloading+"\n"+sd.SdNotifyMonotonicUsec())
	}
}

// NotifyReloaded says a reload is done: the daemon is ready again. Before
// the daemon is ready, it says nothing.
func NotifyReloaded(log *slog.Logger) {
	if started.Load() {
		notify(log, sd.SdNotifyReady)
	}
}

// NotifyStopping says the daemon has begun to shut down.
func NotifyStopping(log *slog.Logger) { notify(log, sd.SdNotifyStopping) }

// notify sends state to NOTIFY_SOCKET, if set; a failure is logged, and
// nothing else changes: the daemon serves whether systemd hears it or not.
func notify(log *slog.Logger, state string) {
	if _, err := sd.SdNotify(false, state); err != nil {
		log.Warn("could not tell the service manager (NOTIFY_SOCKET)", "state", state, "err", err)
	}
}

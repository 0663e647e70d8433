package tmanager

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/internal/httpguard"
	"github.com/egret-stream/egret/proto/egretpb"
)

// Errors Run returns (wrapped); test them with errors.Is.
var (
	// ErrLocationHeld: another topology manager's session kept the
	// location node for the whole establish timeout.
	ErrLocationHeld = errors.New("topology manager location held by another session")
	// ErrLocationLost: this topology manager's location node disappeared
	// or was taken over (session expired, topology killed); it exits so
	// that at most one topology manager serves the topology.
	ErrLocationLost = errors.New("topology manager location lost")
)

// Run runs the topology manager until ctx ends (then it returns nil after
// deleting its location node) or until it must exit: its location node is
// lost, another session holds the node past the establish timeout, or the
// topology's state cannot be read.
func Run(ctx context.Context, cfg Config, log *zap.Logger) error {
	s, err := cfg.resolve()
	if err != nil {
		return err
	}
	log = log.With(zap.String("topology", s.TopologyName))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	srvLn, err := net.Listen("tcp", net.JoinHostPort(s.BindHost, strconv.Itoa(s.ServerPort)))
	if err != nil {
		return fmt.Errorf("tmanager: listen on server port %d: %w", s.ServerPort, err)
	}
	defer srvLn.Close()
	httpLn, err := net.Listen("tcp", net.JoinHostPort(s.BindHost, strconv.Itoa(s.HTTPPort)))
	if err != nil {
		return fmt.Errorf("tmanager: listen on http port %d: %w", s.HTTPPort, err)
	}
	defer httpLn.Close()

	store := state.New(s.StateManager)
	loc := &egretpb.TManagerLocation{
		TopologyName: s.TopologyName, TopologyId: s.TopologyID, Host: s.Host,
		ServerPort: int32(srvLn.Addr().(*net.TCPAddr).Port), HttpPort: int32(httpLn.Addr().(*net.TCPAddr).Port),
		Pid: int32(os.Getpid()),
	}
	own, err := proto.MarshalOptions{Deterministic: true}.Marshal(loc)
	if err != nil {
		return fmt.Errorf("tmanager: encode location: %w", err)
	}
	if err := establish(ctx, s, store, loc, log); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer releaseLocation(s.StateManager, s.TopologyName, own, log)
	log.Info("topology manager established", zap.String("host", s.Host),
		zap.Int32("server_port", loc.ServerPort), zap.Int32("http_port", loc.HttpPort))

	errc := make(chan error, 4)
	fail := func(err error) {
		select {
		case errc <- err:
		default:
		}
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	ownPath := state.Path(state.TManagersDir, s.TopologyName)
	ownEvents, err := s.StateManager.Watch(ctx, ownPath)
	if err != nil {
		return fmt.Errorf("tmanager: watch own location %s: %w", ownPath, err)
	}
	if err := checkOwn(ctx, s.StateManager, ownPath, own); err != nil {
		return err
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		watchOwn(ctx, s.StateManager, ownPath, own, ownEvents, fail)
	}()

	// Watch the packing plan before reading it, so no change is missed.
	ppEvents, err := store.Watch(ctx, state.PackingPlansDir, s.TopologyName)
	if err != nil {
		return fmt.Errorf("tmanager: watch packing plan: %w", err)
	}
	in, err := readInitial(ctx, s, store, log)
	if err != nil {
		return err
	}
	s.sizeLimits(len(in.packing.Containers), taskCount(in.packing))
	ms := newMetricsStore(s.Limits)
	mgr, err := newManager(ctx, s, store, ms, in, log)
	if err != nil {
		return fmt.Errorf("tmanager: %w", err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		watchPacking(ctx, s, store, mgr, ppEvents, log)
	}()

	srv := newServer(mgr, ms, s, log)
	wg.Add(1)
	go func() {
		defer wg.Done()
		srv.acceptLoop(ctx, srvLn)
	}()

	ticker := s.Clock.NewTicker(s.evictionCheckInterval())
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer ticker.Stop()
		for {
			select {
			case <-ticker.C():
				mgr.evictSilent(s.Clock.Now())
			case <-ctx.Done():
				return
			}
		}
	}()
	if mgr.ckpt.on && s.MetricsSocket != "" {
		every := s.MetricsInterval
		if every <= 0 {
			every = 10 * time.Second
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			wire.PublishMetrics(ctx, s.MetricsSocket, every, mgr.checkpointMetrics, log)
		}()
	}
	if mgr.ckpt.on {
		ckptTicker := s.Clock.NewTicker(checkpointTickInterval)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer ckptTicker.Stop()
			for {
				select {
				case <-ckptTicker.C():
					mgr.checkpointTick(s.Clock.Now())
				case <-ctx.Done():
					return
				}
			}
		}()
	}

	a := &api{mgr: mgr, metrics: ms, log: log, maxExc: s.Limits.MaxExceptions}
	hs := &http.Server{
		Handler:           a.handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          zap.NewStdLog(log.Named("http")),
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := hs.Serve(httpguard.Listener(httpLn, log)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fail(fmt.Errorf("tmanager: http server: %w", err))
		}
	}()

	if s.Ready != nil {
		s.Ready(Endpoints{ServerAddr: srvLn.Addr().String(), HTTPAddr: httpLn.Addr().String()})
	}

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
		log.Error("topology manager exiting", zap.Error(runErr))
	}
	cancel()
	_ = srvLn.Close()
	shutdownCtx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	if err := hs.Shutdown(shutdownCtx); err != nil {
		_ = hs.Close()
	}
	stop()
	mgr.closeAll("topology manager shutting down")
	srv.shutdown()
	return runErr
}

// establish creates the ephemeral location node, retrying while another
// session holds it: every retry interval, and at once when the node is
// deleted, until the establish timeout.
func establish(ctx context.Context, s *settings, store *state.Store, loc *egretpb.TManagerLocation, log *zap.Logger) error {
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	path := state.Path(state.TManagersDir, s.TopologyName)
	events, err := s.StateManager.Watch(wctx, path)
	if err != nil {
		return fmt.Errorf("tmanager: watch %s: %w", path, err)
	}
	deadline := s.Clock.Now().Add(s.establishTimeout)
	for attempt := 1; ; attempt++ {
		err := store.RegisterTManager(ctx, loc)
		if err == nil {
			return nil
		}
		if !errors.Is(err, spi.ErrExists) {
			return fmt.Errorf("tmanager: %w", err)
		}
		holder := "unknown"
		if other, err := store.TManagerLocation(ctx, s.TopologyName); err == nil {
			holder = fmt.Sprintf("%s:%d (pid %d, topology id %q)", other.GetHost(), other.GetServerPort(), other.GetPid(), other.GetTopologyId())
		}
		remaining := deadline.Sub(s.Clock.Now())
		if remaining <= 0 {
			return fmt.Errorf("tmanager: %w: %s is held by the topology manager at %s; gave up after %s (%s); it must exit, or its state-manager session expire (after %s), first: %w",
				ErrLocationHeld, path, holder, s.establishTimeout, KeyEstablishTimeout, s.StateManager.SessionTimeout(), err)
		}
		if attempt == 1 {
			log.Warn("another topology manager holds the location; waiting for it to go away",
				zap.String("path", path), zap.String("holder", holder), zap.Duration("timeout", s.establishTimeout))
		}
		select {
		case _, ok := <-events:
			if !ok {
				events = nil // watch ended; keep retrying on the timer
			}
		case <-s.Clock.After(min(s.Limits.EstablishRetryInterval, remaining)):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// checkOwn verifies that the location node is still the one this process
// wrote.
func checkOwn(ctx context.Context, sm spi.StateManager, path string, own []byte) error {
	n, err := sm.Get(ctx, path)
	switch {
	case errors.Is(err, spi.ErrNotFound):
		return fmt.Errorf("tmanager: %w: %s was deleted (session expired or topology killed)", ErrLocationLost, path)
	case err != nil:
		return fmt.Errorf("tmanager: %w: cannot read %s: %w", ErrLocationLost, path, err)
	case !bytes.Equal(n.Data, own):
		return fmt.Errorf("tmanager: %w: %s now belongs to another topology manager", ErrLocationLost, path)
	}
	return nil
}

// watchOwn reports ErrLocationLost when the location node goes away or
// the watch ends before ctx does (the session was closed).
func watchOwn(ctx context.Context, sm spi.StateManager, path string, own []byte, events <-chan spi.Event, fail func(error)) {
	for {
		select {
		case _, ok := <-events:
			if ctx.Err() != nil {
				return
			}
			if !ok {
				fail(fmt.Errorf("tmanager: %w: the state-manager watch of %s ended (session closed)", ErrLocationLost, path))
				return
			}
			if err := checkOwn(ctx, sm, path, own); err != nil {
				if ctx.Err() == nil {
					fail(err)
				}
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// releaseLocation deletes the location node at shutdown if it is still
// ours, so that a successor need not wait for the session to expire.
func releaseLocation(sm spi.StateManager, name string, own []byte, log *zap.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	path := state.Path(state.TManagersDir, name)
	n, err := sm.Get(ctx, path)
	if err != nil || !bytes.Equal(n.Data, own) {
		return
	}
	if err := sm.Delete(ctx, path, n.Version); err != nil {
		log.Warn("could not delete the location node at shutdown; it goes with the session", zap.String("path", path), zap.Error(err))
	}
}

func readInitial(ctx context.Context, s *settings, store *state.Store, log *zap.Logger) (initial, error) {
	var in initial
	var err error
	if in.topo, err = store.Topology(ctx, s.TopologyName); err != nil {
		return in, fmt.Errorf("tmanager: read topology (was %q submitted?): %w", s.TopologyName, err)
	}
	if in.packing, in.packingVersion, err = store.PackingPlan(ctx, s.TopologyName); err != nil {
		return in, fmt.Errorf("tmanager: read packing plan: %w", err)
	}
	es, err := store.ExecutionState(ctx, s.TopologyName)
	if err != nil {
		return in, fmt.Errorf("tmanager: read execution state: %w", err)
	}
	if es.GetTopologyId() != "" && es.GetTopologyId() != s.TopologyID {
		return in, fmt.Errorf("tmanager: the execution state of %q is for topology id %q, this topology manager was started for %q", s.TopologyName, es.GetTopologyId(), s.TopologyID)
	}
	in.deactivated = es.GetDeployDeactivated()
	prev, err := store.PhysicalPlan(ctx, s.TopologyName)
	switch {
	case errors.Is(err, spi.ErrNotFound):
	case err != nil:
		log.Warn("ignoring the unreadable physical plan in the state manager", zap.Error(err))
	case prev.GetTopology().GetId() == s.TopologyID:
		in.previous = prev
		log.Info("continuing after the previous physical plan", zap.Uint64("version", prev.GetVersion()), zap.String("state", stateName(prev.GetState())))
	}
	return in, nil
}

// watchPacking applies every change of the packing plan.
func watchPacking(ctx context.Context, s *settings, store *state.Store, mgr *manager, events <-chan spi.Event, log *zap.Logger) {
	for range events {
		if ctx.Err() != nil {
			return
		}
		p, version, err := store.PackingPlan(ctx, s.TopologyName)
		if errors.Is(err, spi.ErrNotFound) {
			log.Warn("the packing plan was deleted (topology being killed?); keeping the current one")
			continue
		}
		if err != nil {
			log.Error("cannot read the changed packing plan; keeping the current one", zap.Error(err))
			continue
		}
		t, err := store.Topology(ctx, s.TopologyName)
		if err != nil {
			log.Error("cannot read the topology after a packing plan change; keeping the current plan", zap.Error(err))
			continue
		}
		if err := mgr.applyPacking(t, p, version); err != nil {
			log.Error("ignoring an invalid packing plan", zap.Int64("packing_version", version), zap.Error(err))
		}
	}
}

package plugins_test

import (
	"errors"
	"fmt"
	"testing"

	hclog "github.com/hashicorp/go-hclog"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/egret-stream/egret/plugins"
)

func TestHCLogger(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	l := plugins.NewHCLogger(zap.New(core))

	if l.GetLevel() != hclog.Info || l.IsDebug() || !l.IsInfo() {
		t.Errorf("level of an info zap logger: %v debug %v", l.GetLevel(), l.IsDebug())
	}
	l.Debug("dropped")
	l.Trace("dropped")
	l.Named("a").Named("b").With("k", 1).Warn("warned", "err", errors.New("boom"), "f", hclog.Fmt("%d-%s", 7, "x"), "odd")
	l.Named("x").ResetNamed("y").Error("reset")
	l.Log(hclog.NoLevel, "no level")
	fmt.Fprintln(l.StandardWriter(&hclog.StandardLoggerOptions{ForceLevel: hclog.Warn}), "std line")

	all := logs.All()
	if len(all) != 4 {
		t.Fatalf("got %d entries: %v", len(all), all)
	}
	w := all[0]
	fields := w.ContextMap()
	if w.Level != zapcore.WarnLevel || w.LoggerName != "a.b" || w.Message != "warned" ||
		fields["k"] != int64(1) || fields["err"] != "boom" || fields["f"] != "7-x" || fields["EXTRA_VALUE_AT_END"] != "odd" {
		t.Errorf("warn entry: level %v name %q msg %q fields %v", w.Level, w.LoggerName, w.Message, fields)
	}
	if all[1].LoggerName != "y" || all[1].Level != zapcore.ErrorLevel {
		t.Errorf("ResetNamed entry: %+v", all[1])
	}
	if all[2].Level != zapcore.InfoLevel {
		t.Errorf("NoLevel entry: %+v", all[2])
	}
	if all[3].Message != "std line" || all[3].Level != zapcore.WarnLevel {
		t.Errorf("standard writer entry: %+v", all[3])
	}
	if n := l.Named("a").Name(); n != "a" {
		t.Errorf("Name() = %q", n)
	}
	if got := l.With("k", 1).ImpliedArgs(); len(got) != 2 {
		t.Errorf("ImpliedArgs() = %v", got)
	}

	debug := plugins.NewHCLogger(zap.New(zapcore.NewNopCore()))
	if debug.GetLevel() != hclog.Off {
		t.Errorf("level of a disabled logger: %v", debug.GetLevel())
	}
}

package plugins

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"sync"

	hclog "github.com/hashicorp/go-hclog"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// EnvLogLevel is the environment variable that tells a plugin the lowest
// level the host logs (debug, info, warn, error); the Loader sets it from
// the host's zap logger so that a plugin does not format lines the host
// drops.
const EnvLogLevel = "EGRET_PLUGIN_LOG_LEVEL"

// hclogTimeFormat is the @timestamp layout go-plugin's host side parses;
// lines with another layout are not recognised as structured.
const hclogTimeFormat = "2006-01-02T15:04:05.000000Z07:00"

// NewPluginLogger returns the zap logger of a plugin process: JSON lines in
// hclog's format (@level, @message, @timestamp, @module) on the process's
// real stderr, which the host parses and re-emits under its own zap logger
// with the fields intact. The level comes from EGRET_PLUGIN_LOG_LEVEL
// (default info). Serve calls it; call it yourself only to log before
// Serve.
func NewPluginLogger() *zap.Logger {
	return newPluginLogger(os.Stderr, os.Getenv(EnvLogLevel))
}

func newPluginLogger(w io.Writer, level string) *zap.Logger {
	lvl := zapcore.InfoLevel
	if level != "" {
		if l, err := zapcore.ParseLevel(level); err == nil {
			lvl = l
		}
	}
	enc := zapcore.NewJSONEncoder(zapcore.EncoderConfig{
		TimeKey:        "@timestamp",
		LevelKey:       "@level",
		NameKey:        "@module",
		MessageKey:     "@message",
		StacktraceKey:  "stacktrace",
		LineEnding:     zapcore.DefaultLineEnding,
		EncodeLevel:    hclogLevelEncoder,
		EncodeTime:     zapcore.TimeEncoderOfLayout(hclogTimeFormat),
		EncodeDuration: zapcore.StringDurationEncoder,
		EncodeName:     zapcore.FullNameEncoder,
	})
	return zap.New(zapcore.NewCore(enc, zapcore.Lock(zapcore.AddSync(w)), lvl))
}

// hclogLevelEncoder writes zap levels as the hclog level names.
func hclogLevelEncoder(l zapcore.Level, enc zapcore.PrimitiveArrayEncoder) {
	switch {
	case l <= zapcore.DebugLevel:
		enc.AppendString("debug")
	case l == zapcore.InfoLevel:
		enc.AppendString("info")
	case l == zapcore.WarnLevel:
		enc.AppendString("warn")
	default:
		enc.AppendString("error")
	}
}

// zapLevelName is the EGRET_PLUGIN_LOG_LEVEL value for the lowest level z
// logs.
func zapLevelName(z *zap.Logger) string {
	for _, l := range []zapcore.Level{zapcore.DebugLevel, zapcore.InfoLevel, zapcore.WarnLevel} {
		if z.Core().Enabled(l) {
			return l.String()
		}
	}
	return zapcore.ErrorLevel.String()
}

// hclogger is an hclog.Logger that writes to a zap logger. go-plugin logs
// through it on the host: its own messages and every line a plugin writes
// to stderr, whose JSON fields become zap fields.
type hclogger struct {
	root    *zap.Logger // without name and implied fields
	z       *zap.Logger
	name    string
	implied []any
}

var _ hclog.Logger = (*hclogger)(nil)

// NewHCLogger returns an hclog.Logger that writes to z. Trace maps to
// zap's debug level.
func NewHCLogger(z *zap.Logger) hclog.Logger {
	return &hclogger{root: z, z: z}
}

func (l *hclogger) Log(level hclog.Level, msg string, args ...any) {
	var zl zapcore.Level
	switch level {
	case hclog.Trace, hclog.Debug:
		zl = zapcore.DebugLevel
	case hclog.Info, hclog.NoLevel, hclog.DefaultLevel:
		zl = zapcore.InfoLevel
	case hclog.Warn:
		zl = zapcore.WarnLevel
	case hclog.Error:
		zl = zapcore.ErrorLevel
	default: // hclog.Off
		return
	}
	if ce := l.z.Check(zl, msg); ce != nil {
		ce.Write(zapFields(args)...)
	}
}

// zapFields converts hclog's alternating keys and values.
func zapFields(args []any) []zap.Field {
	fields := make([]zap.Field, 0, len(args)/2+1)
	for i := 0; i < len(args); i += 2 {
		if i+1 == len(args) {
			fields = append(fields, zap.Any("EXTRA_VALUE_AT_END", args[i]))
			break
		}
		key, ok := args[i].(string)
		if !ok {
			key = fmt.Sprint(args[i])
		}
		switch v := args[i+1].(type) {
		case hclog.Format:
			if len(v) > 0 {
				if f, ok := v[0].(string); ok {
					fields = append(fields, zap.String(key, fmt.Sprintf(f, v[1:]...)))
					continue
				}
			}
			fields = append(fields, zap.String(key, fmt.Sprint(v...)))
		case error:
			fields = append(fields, zap.NamedError(key, v))
		default:
			fields = append(fields, zap.Any(key, v))
		}
	}
	return fields
}

func (l *hclogger) Trace(msg string, args ...any) { l.Log(hclog.Trace, msg, args...) }
func (l *hclogger) Debug(msg string, args ...any) { l.Log(hclog.Debug, msg, args...) }
func (l *hclogger) Info(msg string, args ...any)  { l.Log(hclog.Info, msg, args...) }
func (l *hclogger) Warn(msg string, args ...any)  { l.Log(hclog.Warn, msg, args...) }
func (l *hclogger) Error(msg string, args ...any) { l.Log(hclog.Error, msg, args...) }

func (l *hclogger) IsTrace() bool { return l.z.Core().Enabled(zapcore.DebugLevel) }
func (l *hclogger) IsDebug() bool { return l.z.Core().Enabled(zapcore.DebugLevel) }
func (l *hclogger) IsInfo() bool  { return l.z.Core().Enabled(zapcore.InfoLevel) }
func (l *hclogger) IsWarn() bool  { return l.z.Core().Enabled(zapcore.WarnLevel) }
func (l *hclogger) IsError() bool { return l.z.Core().Enabled(zapcore.ErrorLevel) }

func (l *hclogger) ImpliedArgs() []any { return append([]any(nil), l.implied...) }

func (l *hclogger) With(args ...any) hclog.Logger {
	return &hclogger{root: l.root, z: l.z.With(zapFields(args)...), name: l.name, implied: append(l.ImpliedArgs(), args...)}
}

func (l *hclogger) Name() string { return l.name }

func (l *hclogger) Named(name string) hclog.Logger {
	full := name
	if l.name != "" {
		full = l.name + "." + name
	}
	return &hclogger{root: l.root, z: l.z.Named(name), name: full, implied: l.ImpliedArgs()}
}

func (l *hclogger) ResetNamed(name string) hclog.Logger {
	z := l.root
	if name != "" {
		z = z.Named(name)
	}
	return &hclogger{root: l.root, z: z.With(zapFields(l.implied)...), name: name, implied: l.ImpliedArgs()}
}

// SetLevel does nothing: the zap logger's level rules.
func (l *hclogger) SetLevel(hclog.Level) {}

// GetLevel returns the lowest level the zap logger writes. go-plugin skips
// plugin log lines below it without parsing them.
func (l *hclogger) GetLevel() hclog.Level {
	switch {
	case l.IsDebug():
		return hclog.Trace
	case l.IsInfo():
		return hclog.Info
	case l.IsWarn():
		return hclog.Warn
	case l.IsError():
		return hclog.Error
	}
	return hclog.Off
}

func (l *hclogger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(l.StandardWriter(opts), "", 0)
}

func (l *hclogger) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	level := hclog.Info
	if opts != nil && opts.ForceLevel != hclog.NoLevel {
		level = opts.ForceLevel
	}
	return &lineWriter{log: func(line string) { l.Log(level, line) }}
}

// lineWriter calls log for every complete line written to it; a partial
// last line waits for its newline (or Flush).
type lineWriter struct {
	log func(line string)
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for {
		i := bytes.IndexByte(w.buf.Bytes(), '\n')
		if i < 0 {
			break
		}
		line := strings.TrimRight(string(w.buf.Next(i+1)), "\r\n")
		if line != "" {
			w.log(line)
		}
	}
	return len(p), nil
}

package api

import (
	"fmt"

	"github.com/egret-stream/egret/core/topology"
)

// Shell describes a spout or bolt run by a subprocess that speaks Storm's
// multilang protocol (a Python component built on pystorm or streamparse,
// for example); see docs/multilang.md. Build one with ShellSpout or
// ShellBolt, declare its output streams, and add it to a topology with
// TopologyBuilder.SetShellSpout or SetShellBolt:
//
//	b.SetShellBolt("split", api.ShellBolt("python3", "split.py").Declare("word"), 4).
//		ShuffleGrouping("sentences")
//
// The subprocess runs in the topology's resources directory
// (Context.ResourcesDir). A command containing a slash is relative to that
// directory; a bare name is looked up in the directories of the
// topology.multilang.path setting, then in the PATH.
type Shell struct {
	bolt    bool
	command string
	args    []string
	streams []topology.Stream
	env     []string
}

// ShellSpout returns a spout run by command with args.
func ShellSpout(command string, args ...string) *Shell {
	return &Shell{command: command, args: args}
}

// ShellBolt returns a bolt run by command with args.
func ShellBolt(command string, args ...string) *Shell {
	return &Shell{bolt: true, command: command, args: args}
}

// Declare declares the default stream with the given fields.
func (s *Shell) Declare(fields ...string) *Shell {
	return s.DeclareStream(topology.DefaultStream, fields...)
}

// DeclareStream declares a named stream the subprocess emits to.
func (s *Shell) DeclareStream(stream string, fields ...string) *Shell {
	s.streams = append(s.streams, topology.Stream{ID: stream, Fields: append([]string(nil), fields...)})
	return s
}

// DeclareDirectStream declares a direct stream (the subprocess names the
// task of each tuple).
func (s *Shell) DeclareDirectStream(stream string, fields ...string) *Shell {
	s.streams = append(s.streams, topology.Stream{ID: stream, Fields: append([]string(nil), fields...), Direct: true})
	return s
}

// Env adds an environment variable of the subprocess (it inherits the
// instance's environment otherwise).
func (s *Shell) Env(key, value string) *Shell {
	s.env = append(s.env, key+"="+value)
	return s
}

func (s *Shell) declareOutputFields(d OutputDeclarer) {
	for _, st := range s.streams {
		if st.Direct {
			d.DeclareDirectStream(st.ID, st.Fields...)
		} else {
			d.DeclareStream(st.ID, st.Fields...)
		}
	}
}

func (s *Shell) check(name string, wantBolt bool) []string {
	var problems []string
	if s == nil {
		return []string{fmt.Sprintf("component %q: shell component is nil", name)}
	}
	if s.bolt != wantBolt {
		kind, other := "ShellSpout", "SetShellBolt"
		if s.bolt {
			kind, other = "ShellBolt", "SetShellSpout"
		}
		problems = append(problems, fmt.Sprintf("component %q: a %s is given to %s", name, kind, other))
	}
	if s.command == "" {
		problems = append(problems, fmt.Sprintf("component %q: shell component without a command", name))
	}
	return problems
}

// SetShellSpout adds a spout run by a subprocess (see Shell).
func (b *TopologyBuilder) SetShellSpout(name string, s *Shell, parallelism int) *SpoutDeclarer {
	if p := s.check(name, false); len(p) > 0 {
		b.problems = append(b.problems, p...)
		return b.SetSpout(name, func() Spout { return &shellSpout{} }, parallelism)
	}
	return b.SetSpout(name, func() Spout { return &shellSpout{shellRunner: shellRunner{spec: s}} }, parallelism)
}

// SetShellBolt adds a bolt run by a subprocess (see Shell).
func (b *TopologyBuilder) SetShellBolt(name string, s *Shell, parallelism int) *BoltDeclarer {
	if p := s.check(name, true); len(p) > 0 {
		b.problems = append(b.problems, p...)
		return b.SetBolt(name, func() Bolt { return &shellBolt{} }, parallelism)
	}
	return b.SetBolt(name, func() Bolt { return newShellBolt(s) }, parallelism)
}

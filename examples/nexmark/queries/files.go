package queries

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/examples/nexmark/source"
)

// q10Sink writes bids to files partitioned by day and minute:
// DIR/dt=yyyy-MM-dd/hm=HH:mm/part-<task>.tsv, one tab-separated line
// (auction, bidder, price, date_time, extra) per bid. Files are flushed
// and closed at the end of the input and when the task stops.
type q10Sink struct {
	dir     string
	task    int
	files   map[string]*os.File
	writers map[string]*bufio.Writer
	line    []byte
}

func newQ10Sink(ctx api.Context) (*q10Sink, error) {
	dir := ctx.Config(KeyQ10Dir)
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "nexmark-q10")
	}
	if strings.HasPrefix(dir, "hdfs://") {
		return nil, fmt.Errorf("setting %s=%q: q10 writes to a local directory only (HDFS is not supported yet)", KeyQ10Dir, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("q10: %w", err)
	}
	return &q10Sink{dir: dir, task: ctx.TaskIndex(), files: map[string]*os.File{}, writers: map[string]*bufio.Writer{}}, nil
}

func (s *q10Sink) write(t api.Tuple) error {
	ms := t.Int64(bDateTime)
	part := filepath.Join("dt="+Day(ms), "hm="+Minute(ms))
	w, ok := s.writers[part]
	if !ok {
		if err := os.MkdirAll(filepath.Join(s.dir, part), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(filepath.Join(s.dir, part, "part-"+strconv.Itoa(s.task)+".tsv"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		w = bufio.NewWriterSize(f, 64<<10)
		s.files[part], s.writers[part] = f, w
	}
	s.line = strconv.AppendInt(s.line[:0], t.Int64(bAuction), 10)
	s.line = append(s.line, '\t')
	s.line = strconv.AppendInt(s.line, t.Int64(bBidder), 10)
	s.line = append(s.line, '\t')
	s.line = strconv.AppendInt(s.line, t.Int64(bPrice), 10)
	s.line = append(s.line, '\t')
	s.line = strconv.AppendInt(s.line, ms, 10)
	s.line = append(s.line, '\t')
	s.line = append(s.line, t.String(bExtra)...)
	s.line = append(s.line, '\n')
	_, err := w.Write(s.line)
	return err
}

func (s *q10Sink) close() error {
	var errs []error
	for part, w := range s.writers {
		errs = append(errs, w.Flush(), s.files[part].Close())
	}
	clear(s.writers)
	clear(s.files)
	return errors.Join(errs...)
}

func init() {
	register(&Query{Name: "q10", Title: "log to the file system: bids in files partitioned by day and minute", build: func(p *Plan) {
		events := p.Events(false, 0)
		// The sink closes its files at the end of the input: an
		// eventBolt whose Results end hook closes them.
		d := p.Topology().SetBolt(p.Name("files"), func() api.Bolt { return &q10Bolt{q: p.q.Name} }, p.parallelism).
			Input(events, source.BidStream, api.LocalOrShuffle())
		p.withEnd(d)
	}})
}

// q10Bolt runs a q10Sink.
type q10Bolt struct {
	q     string
	sink  *q10Sink
	res   *Results
	out   api.BoltCollector
	tasks int
	ends  map[int]bool
}

func (b *q10Bolt) Prepare(ctx api.Context, out api.BoltCollector) error {
	var err error
	if b.sink, err = newQ10Sink(ctx); err != nil {
		return err
	}
	b.res, b.out, b.ends = NewResults(ctx, b.q), out, map[int]bool{}
	b.tasks = len(ctx.ComponentTasks(ctx.ComponentName()[:len(b.q)] + "-events"))
	return nil
}

func (b *q10Bolt) Execute(t api.Tuple) {
	switch {
	case t.SourceStream() == source.EndStream:
		b.ends[t.SourceTask()] = true
		if len(b.ends) == b.tasks {
			if err := b.sink.close(); err != nil {
				b.out.ReportError(fmt.Errorf("q10: %w", err))
			}
			b.res.End()
		}
	case t.IsTick():
	default:
		if err := b.sink.write(t); err != nil {
			b.out.ReportError(fmt.Errorf("q10: %w", err))
			b.out.Fail(t)
			return
		}
		b.res.Count()
	}
	b.out.Ack(t)
}

func (b *q10Bolt) Cleanup() {
	_ = b.sink.close()
}

func (b *q10Bolt) DeclareOutputFields(api.OutputDeclarer) {}

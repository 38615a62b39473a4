package convert

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
)

// Progress on a terminal: a conversion of many files, or one that takes
// more than a few seconds, shows on stderr how many files, runs and bytes
// are done and an estimate of the time left. Never when stderr is not a
// terminal, nor with --quiet.

// stderrIsTerminal says whether progress may show; tests replace it.
var stderrIsTerminal = isTerminal

// progressFiles: this many files show progress from the first tick;
// fewer show it once the work takes progressAfter. Tests change them.
var (
	progressFiles = 100
	progressAfter = 2 * time.Second
	progressTick  = 200 * time.Millisecond
)

// progress is the bar, and the writer of stderr while it may show: a
// warning first clears the bar, which comes back at the next tick. A nil
// progress shows nothing.
type progress struct {
	out     io.Writer
	noColor bool
	now     func() time.Time

	mu         sync.Mutex
	bar        *progressbar.ProgressBar
	begun      time.Time
	files      int
	totalFiles int
	runs       int
	bytes      int64
	totalBytes int64
	read       atomic.Int64 // bytes read of a single input
	single     bool

	stop    chan struct{}
	stopped chan struct{}
	once    sync.Once
}

// newProgress makes the progress of a conversion writing its reports to
// out, or nil when it must not show.
func newProgress(out io.Writer, show, noColor bool) *progress {
	if !show {
		return nil
	}
	return &progress{out: out, noColor: noColor, now: time.Now}
}

// start begins the progress of many files.
func (p *progress) start(files int, srcs []Source) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.totalFiles = files
	for _, s := range srcs {
		p.totalBytes += s.Size
	}
	p.mu.Unlock()
	p.run()
}

// reading begins the progress of one input of size bytes: it counts what
// is read of r.
func (p *progress) reading(r io.Reader, size int64) io.Reader {
	if p == nil || size <= 0 {
		return r
	}
	p.mu.Lock()
	p.totalFiles, p.totalBytes, p.single = 1, size, true
	p.mu.Unlock()
	p.run()
	return &countingReader{r: r, n: &p.read}
}

func (p *progress) run() {
	p.begun = p.now()
	p.stop, p.stopped = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(p.stopped)
		t := time.NewTicker(progressTick)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.render()
			}
		}
	}()
}

// update records how far a conversion of many files got.
func (p *progress) update(m ManyProgress) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.files, p.runs, p.bytes = m.Files, m.Runs, m.Bytes
	p.mu.Unlock()
}

// render shows the bar, once the work is long enough to want one.
func (p *progress) render() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar == nil {
		if p.totalFiles < progressFiles && p.now().Sub(p.begun) < progressAfter {
			return
		}
		p.bar = p.newBar()
	}
	done := p.bytes
	desc := fmt.Sprintf("%d/%d files, %d runs", p.files, p.totalFiles, p.runs)
	if p.single {
		done = min(p.read.Load(), p.totalBytes)
		desc = "1 file"
	}
	p.bar.Describe(desc)
	p.bar.Set64(done)
}

func (p *progress) newBar() *progressbar.ProgressBar {
	theme := progressbar.Theme{Saucer: "=", SaucerHead: ">", SaucerPadding: " ", BarStart: "[", BarEnd: "]"}
	if !p.noColor {
		theme.Saucer, theme.SaucerHead = "[green]=[reset]", "[green]>[reset]"
	}
	return progressbar.NewOptions64(max(p.totalBytes, 1),
		progressbar.OptionSetWriter(p.out),
		progressbar.OptionEnableColorCodes(!p.noColor),
		progressbar.OptionSetTheme(theme),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowTotalBytes(true),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetWidth(24),
		progressbar.OptionThrottle(0),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetDescription("agentconv:"),
	)
}

// Write writes a report to stderr, clearing the bar first.
func (p *progress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.Clear()
	}
	return p.out.Write(b)
}

// finish stops and clears the bar; what follows on stderr is plain.
func (p *progress) finish() {
	if p == nil {
		return
	}
	p.once.Do(func() {
		if p.stop != nil {
			close(p.stop)
			<-p.stopped
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.bar != nil {
			p.bar.Clear()
			p.bar = nil
		}
	})
}

type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n.Add(int64(n))
	return n, err
}

package codex

import (
	"bufio"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentconv/agentconv/formats"
	"github.com/goccy/go-json"
)

// Codex 0.171's subagents (spawn_agent) run in threads of their own, each
// with a rollout of its own beside its parent's: its session_meta names
// the parent (parent_thread_id), and the parent's rollout says where the
// subagent started (an item_completed of type SubAgentActivity, kind
// "started", with the spawning call's id and the subagent's thread id).
// The parent's reader reads the subagent's rollout there, under the call;
// a directory walk and `agentconv sessions` leave it out (rolloutOwner).

// subagentItem is the item of an item_completed that says a subagent
// started.
type subagentItem struct {
	Type     string `json:"type"`
	ID       string `json:"id"`
	Kind     string `json:"kind"`
	ThreadID string `json:"agent_thread_id"`
	Path     string `json:"agent_path"`
	Model    string `json:"model"`
}

// rolloutOwner is the parent's rollout of a subagent's rollout, found in
// the same sessions tree (YYYY/MM/DD under it), or "" for a rollout that
// stands alone or whose parent's rollout is not there. Only a file named
// as a rollout is opened: the hook is asked of every file of a walk.
func rolloutOwner(path string) string {
	if base := filepath.Base(path); !strings.HasPrefix(base, "rollout-") || !strings.HasSuffix(base, ".jsonl") {
		return ""
	}
	parent := rolloutParent(path)
	if parent == "" {
		return ""
	}
	return threadRollout(path, parent)
}

// rolloutParent reads a rollout's session_meta for its parent thread.
func rolloutParent(path string) string {
	f, err := formats.OpenFound(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	// A small buffer: most files are not a subagent's, and a longer
	// first line is read on below.
	br := bufio.NewReaderSize(f, 4<<10)
	line, err := br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		// A session_meta longer than the buffer (long instructions):
		// read on, up to a bound.
		rest := append([]byte(nil), line...)
		for err == bufio.ErrBufferFull && len(rest) < 4<<20 {
			line, err = br.ReadSlice('\n')
			rest = append(rest, line...)
		}
		line = rest
	}
	var l struct {
		Type    string `json:"type"`
		Payload struct {
			Parent string          `json:"parent_thread_id"`
			Source json.RawMessage `json:"source"`
		} `json:"payload"`
	}
	if json.Unmarshal(line, &l) != nil || l.Type != "session_meta" {
		return ""
	}
	if l.Payload.Parent != "" {
		return l.Payload.Parent
	}
	return subagentParent(l.Payload.Source)
}

// threadRollout finds the rollout of thread id in the sessions tree that
// holds the rollout at path (path's YYYY/MM/DD folder is three below it).
func threadRollout(path, id string) string {
	if id == "" || strings.ContainsAny(id, `/\*?[`) {
		return ""
	}
	root := filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(path))))
	for _, pattern := range []string{
		filepath.Join(filepath.Dir(path), "rollout-*-"+id+".jsonl"),
		filepath.Join(root, "*", "*", "*", "rollout-*-"+id+".jsonl"),
	} {
		if m, _ := filepath.Glob(pattern); len(m) > 0 && m[0] != path {
			return m[0]
		}
	}
	return ""
}

// subagent reads the rollout of the subagent that the item says started,
// under the call that spawned it: its run becomes the subagent (its
// RunStart an AgentStart, its RunEnd an AgentEnd), and its events are the
// subagent's.
func (r *rolloutReader) subagent(it subagentItem) {
	if r.opts.Path == "" {
		if !r.warnedSub {
			r.warnedSub = true
			r.opts.Report.Warn(r.src.Line, "call %s started a subagent (thread %s), whose rollout is beside this one: name the file (not standard input) to convert its subagents too", it.ID, it.ThreadID)
		}
		return
	}
	path := threadRollout(r.opts.Path, it.ThreadID)
	if path == "" || r.depth > 16 {
		r.opts.Report.Warn(r.src.Line, "call %s started a subagent (thread %s), whose rollout is not beside this one: its events are not converted", it.ID, it.ThreadID)
		return
	}
	f, err := formats.OpenFound(path)
	if err != nil {
		r.opts.Report.Warn(r.src.Line, "call %s started a subagent, whose rollout cannot be read (%v): its events are not converted", it.ID, err)
		return
	}
	defer f.Close()
	o := r.opts
	o.Path = path
	where := o.Report.SetWhere(func(line int) string { return path + ":" + strconv.Itoa(line) + ": " })
	defer func() { o.Report.SetWhere(where) }()
	sub := newRolloutReader(f, o).(*rolloutReader)
	sub.depth = r.depth + 1
	label := strings.TrimPrefix(it.Path, "/root/")
	if label == "" {
		label = "subagent"
	}
	r.ensureRun()
	for {
		e, err := sub.Next()
		if err != nil {
			if le, ok := err.(*formats.LineError); ok {
				o.Report.Warn(le.Line, "%s; the subagent's rollout is read up to it", le.Msg)
			}
			break
		}
		switch e.Kind {
		case formats.RunStart:
			model := e.Run.Model
			if model == "" {
				model = it.Model
			}
			e.Kind, e.Run = formats.AgentStart, formats.RunInfo{}
			e.AgentInfo = formats.AgentInfo{Label: label, ParentCall: it.ID, Model: model}
			e.Agent = it.ThreadID
		case formats.RunEnd:
			e.Kind, e.Run = formats.AgentEnd, formats.RunInfo{}
			e.Agent = it.ThreadID
		default:
			if e.Agent == "" {
				e.Agent = it.ThreadID
			} else if e.Kind == formats.AgentStart && e.AgentInfo.Parent == "" {
				e.AgentInfo.Parent = it.ThreadID
			}
		}
		// Its records stay its own: a copy to codex-rollout with -o DIR
		// writes them to the subagent's rollout (rolloutWriter.Observe).
		r.q = append(r.q, e)
	}
}

// Package formats holds the event model that every dialect reads into and
// writes out of, and the small helpers the dialect packages share.
//
// A reader turns one dialect into a sequence of Events; a writer turns that
// sequence into another dialect. The model is normalised: it names what
// happened (a tool call started, a turn ended) and never how one provider
// spells it. Whatever a reader cannot express in the model travels in
// Event.Source, so that a writer of the same dialect can print it verbatim.
//
// Between them stands the pipeline (package convert): it reads events,
// keeps the run view (RunView), reports what the target cannot carry,
// copies the records that go back to their own dialect, and gives the
// rest to the writer. What follows is the contract between readers, the
// pipeline and writers. formatstest.Conformance checks it for a dialect
// (the rule each part names is the one its failures name), and every row
// of the registry has a test that calls it.
//
// # Readers
//
// A reader (Dialect.NewReader) reads one input. Next gives its events one
// at a time, and io.EOF after the last.
//
//   - Errors ("read"). A record the reader cannot read is a *LineError;
//     Next may be called again to go on with the next record (--lenient).
//     Any other error is fatal. Next never gives neither an event nor an
//     error, and ends on every input, however malformed.
//   - Source ("source", "continued", "made"). Every event names its
//     dialect (Source.Dialect, from ReadOptions.Dialect) and, where the
//     input has them, its record's type and line (Source.Type, LineNo).
//     A reader of records gives each record to one event, in Source.Line,
//     so that a writer of the same dialect copies the input byte for byte:
//     the first event the record makes; the others are Continued. A
//     record that makes no event goes with the next event's Line. An event
//     that stands for no record is Made: the reader made it (a run's end
//     that the dialect never prints, a RunStart before the first record, a
//     message gathered from its deltas at a cut). A reader whose events
//     carry no record (a document read whole) marks neither. A reader never
//     sets Event.Synthetic, which marks what the pipeline makes.
//   - Runs ("runs"). A run is its events from a RunStart to its RunEnd. A
//     reader gives a RunStart where its source says a run begins. For a
//     dialect that prints none it may make one (Made), or leave it to the
//     pipeline, which opens a run (Synthetic) before an event that comes
//     outside one. A reader that gives RunStarts gives only Raw events
//     between a RunEnd and the next RunStart (one that gives none leaves
//     the pipeline to open each run). A reader gives a RunEnd only where
//     the source shows the
//     run ended: the dialect's own end record; or, for a dialect that
//     prints no run end (Codex's exec --json, OpenCode's and pi's JSON
//     modes, malac), where the next run begins or the input ends, if the
//     source showed the run finished (its last turn ended, its agent
//     ended, an error ended it; a dialect whose records say none of these
//     says in its reader which record shows it, as malac's turn_finished
//     does). Such a reader ends its last run with
//     EndAtEOF (the conformance check fails on a fixture whose last run
//     has no end, unless the test names it formatstest.Cut). A run the
//     source cut is left open: the pipeline closes it,
//     with a warning, by ending its open calls (Cancelled) and subagents and
//     giving a Cut RunEnd; a RunStart while a run is open closes that run
//     the same way. A RunEnd may leave Status and Run.ExitCode unknown: the
//     view settles them (RunView.Settle). Its Usage is the source's run
//     totals where it gives them, never a sum the reader made of the
//     requests (RunTotals is the one rule).
//   - Subagents ("agents"). The main agent's events have Agent "". A
//     subagent's events carry its id in Agent, after its AgentStart and
//     before its AgentEnd; AgentInfo.Parent is "" or an agent already
//     started, ParentCall the call that spawned it, when the source says.
//     An id is not started again while its agent runs. Agents may
//     interleave.
//   - Calls ("calls"). A ToolResult comes after the ToolCall of its id, in
//     the same run and agent, once; only a refused call (Call.Status
//     Denied) may have no ToolCall. No two open calls share an id. Calls
//     still open when the run ends are the pipeline's to close.
//   - Usage ("usage"). A Usage event counts one model request of its
//     agent. It goes with that request's output: in the stretch of the
//     agent's events between the model's input before the request (a
//     prompt, the results of the previous request's calls) and its next
//     input (the results of this request's calls), which holds the
//     request's Message, deltas and ToolCalls, after them (as most sources
//     print it) or before. So a Usage never comes after a result of a call
//     its request made, and no request of an agent that gives its
//     requests' usage is without its own: not on the next request, not
//     dropped at the end. A source that counts a turn's requests together
//     gives one Usage marked Aggregate, which no request takes. The counts
//     have the meanings of UsageInfo, whatever the source's convention.
//     A request whose output the source did not record (a trace written
//     without content) gives its Usage alone, marked Unrecorded.
//     One request needs none: one whose only output is calls that end
//     refused. A source may give a refused call with no ToolCall (see
//     Calls), and a writer whose format has no result without its call
//     writes the call in a request of its own, which the source never
//     showed and never counted; it writes no usage for it, since counts
//     would be invented, and its reader gives that request without one.
//   - Times ("times"). Time is the source's, or zero: readers never invent
//     times. An agent's times do not go back.
//   - Counts ("counts"). No count, cost or duration is negative; a count
//     the source does not give is unknown, not 0.
//   - Detection ("detect"). A dialect with a Detect gives its own inputs a
//     score above 0 (after lines that are not JSON, which the pipeline
//     skips before a stream).
//   - Figures ("figures"). Read with ReadOptions.Figures (agentconv
//     sessions), a reader gives the same events as read whole, but that it
//     may leave out a successful call's output ("") and a subagent's
//     report taken from it: figures never depend on what a reader skips.
//
// Optional: whatever the source does not say. TurnStart and TurnEnd (a
// source may give TurnEnd alone), deltas or whole Messages or both (a
// whole message after its deltas repeats them: see TextTracker), Answer
// (the view's answer falls back to the last text), Usage per request,
// AgentInfo, PermissionRequest and PermissionAnswer, Todos, Compaction,
// ModelChange. A record that the model has no place for is a Raw event
// (Source.Known if it holds nothing of a run), which only a writer of its
// own dialect writes.
//
// # Writers
//
// A writer (Dialect.NewWriter) writes events in its dialect.
//
// It may assume:
//   - Every event comes inside a run: the pipeline opens a run before an
//     event outside one and closes the runs the source left open (Cut,
//     Synthetic), so a writer sees each RunStart matched by a RunEnd.
//   - When it gets a RunEnd, the run view is final: Status is not
//     StatusUnknown, and Run.ExitCode is set unless the run succeeded and
//     the source gave none (Settle normalises the event too).
//   - A ToolResult follows its ToolCall, or is refused (Denied).
//   - Call.Output is decoded (Output.Decode), unless the writer takes an
//     undecoded literal as it is (RawOutputWriter).
//   - An event may need (Needs) features its row does not carry: the
//     pipeline has reported that loss before the writer gets the event,
//     and the writer leaves out what it cannot carry without reporting it
//     again.
//
// It must:
//   - Read the run's meaning (outcome, exit code, failure, answer, usage
//     totals, agents, calls) in the run view it is given with each event
//     (Write(e, v), Observe(e, v)), which has already seen the event, and
//     never change it. In a pipeline that is the pipeline's view, the same
//     at every call; outside one, Standalone(w) follows a view of its own.
//   - Read back of a run's calls that ended (RunView.Calls) only the one
//     whose result it is given (Get), their number (Count) and the last
//     one (Last), unless its row says HoldsRun: in a pipeline the view
//     forgets the other calls that ended, so that memory is bounded by
//     what stays live in a run (its open calls), not by its number of
//     calls. A writer that holds a whole run (a document of it, a summary
//     of every call) says HoldsRun, and the view keeps every call for it
//     (All).
//   - Not keep an event, nor what it points to, after Write returns,
//     unless it copies it; a row that says KeepsNoEvents keeps nothing at
//     all, not even the bytes of Source.Line or of an undecoded
//     Call.Output.
//   - Report ("losses") only the losses of its own encoding, each one of
//     the phrases its row declares in Quirks. What it cannot carry at all
//     it leaves out of Carries, and the pipeline reports it.
//   - Write what a final-object writer still holds in Close, which the
//     pipeline calls once, after the last event. An error of Write or
//     Close ends the conversion.
//   - Write what its own dialect's reader reads back ("read back"), if the
//     dialect reads: without malformed records, keeping the reader's
//     rules, with the runs written.
//
// A writer that is an Observer lets the pipeline copy its own dialect's
// records as they are: for an event read from its dialect that carries a
// record (Source.Line) or has nothing to copy (Source.NothingToCopy), the
// pipeline writes the record itself and only shows the writer the event
// (Observe), so that it can close the run if it has to. A writer that is
// not gets every event through Write. A writer of Files makes its files
// through WriteOptions.Create (a CopyTarget says where copied records go);
// a RunFile writer writes one document per run; a Remote writer delivers
// elsewhere, and its output is not checked here.
//
// # A new dialect
//
// A dialect is its package (a Dialect value, its reader and writer), one
// line in the registry (convert.Dialects), its fixtures under testdata/,
// and a test that calls formatstest.Conformance with them, whose failures
// say what is missing, where (fixture, event, line) and by which rule.
package formats

// Package ai is Weft's typed layer: declare what you want from a model as a
// Go function, and the package supplies the implementation.
//
//	type Translate struct{ Text, Language string }
//
//	translate, err := ai.Func[Translate, string](model,
//		ai.System("You are a professional translator into {{.Language}}."),
//		ai.User("Translate the following text: {{.Text}}"))
//	fr, err := translate(ctx, Translate{Text: "Hello", Language: "French"})
//
// [Func] declares one function; [Bind] fills every func field of a struct
// (a whole service); [StreamFunc] and [EventFunc] stream. Types take the
// place of annotations: a [MemoryID] argument selects the conversation, a
// [UserName] names the user, [Params] override model parameters for one
// call, llm.Image arguments become image parts of the user message, and the
// return type says how the answer is parsed ([Result] adds usage, sources
// and tool executions to the value).
//
// # The pipeline
//
// Every call — typed, streamed, or a platform chat turn through [Engine] —
// runs the same steps in this order:
//
//  1. Memory: the conversation of the memory ID is resolved (created on
//     first use) and held for the turn (memory.Chat.Begin): its lease is
//     taken, so turns on one conversation are serialised (across processes
//     on a shared store) and never interleave their messages; its window is
//     loaded; and the user message is stored, when it is known already (no
//     input guardrails, and not StoreAugmented) — one round trip on a
//     memory.TurnStore. A request that cannot fit a token window even
//     without history is refused first, before the store is touched. A
//     memory with a summarizer (memory.WithSummary) also reads the
//     conversation's running summary, in the same round trip.
//  2. Messages: system and user messages are rendered from templates over
//     the argument (package prompt). Without a System template the
//     SystemFor provider is asked; without either, memory's system
//     message stays. An identical system message is not stored twice; a
//     different one replaces the old.
//  3. Retrieval: the Augmentor turns the user message into an augmented one
//     and reports its sources (Outcome.Sources). A failing augmentor is
//     reported to listeners and the turn goes on, unless it was configured
//     as fatal. RecallFacts recalls what long-term memory keeps about the
//     turn's end user (tool.User) into the system context, its facts
//     among the sources; a failing recall degrades the same way.
//  4. Input guardrails see the augmented message: pass, fail or rewrite.
//  5. Output format: for a structured return type, a JSON Schema response
//     format when the model declares support, else format instructions
//     appended to the user message.
//  6. Assembly: system message, history and the user message (with format
//     instructions) become the request; the running summary follows the
//     system prompt in the system message (Outcome.Summary). A token
//     window keeps the history that leaves room for the rest of the
//     request (system message with the summary, tools, the user message as
//     sent, the reply's overhead); a request that
//     cannot fit fails with an error matching llm.ErrContextTooLong. Memory
//     keeps the user message as it was before augmentation (or as sent,
//     with StoreAugmented); one not stored in step 1 is stored now, before
//     the model is called.
//  7. Moderation, when configured, runs concurrently with the model call;
//     a flagged input fails the call with a *ModerationError.
//  8. The model call, streamed when the caller consumes events. Every
//     request passes through the TransformRequest function first.
//  9. The tool loop: calls the Approval option picks pause the turn (see
//     below); a round's calls run concurrently; errors, panics,
//     unknown tools and bad arguments become error results the model sees
//     (policies: ToolErrors, UnknownTools, BadToolArguments); immediate
//     tools end the turn (ImmediateReturn); after MaxToolRounds rounds
//     the call fails with a *ToolRoundsError carrying the partial outcome.
//  10. Output guardrails: pass, fail, rewrite, or re-prompt the model
//     (bounded by OutputGuardrails' retries).
//  11. Parsing into the declared type, tolerant of code fences and prose
//     around JSON; a failure is sent back to the model with the error
//     (ParseRetries times), then returned as a *ParseError with the raw
//     text.
//  12. Memory write, and the conversation released, in one round trip: a
//     new system message, the tool rounds and the final answer, named
//     after Turn.ID (see TurnOfRecord). Then, in the background, a
//     summarizer folds what the request let go of the window into the
//     summary; the turn does not wait for it. A failed or cancelled turn still
//     writes its finished tool rounds and, when the model was answering,
//     the text it had said, as a partial answer (the error is then a
//     *PartialError). Listeners
//     see started, request, response, tool executed, guardrail, completed and
//     error notices, all with one invocation ID; OpenTelemetry spans with
//     gen_ai.* attributes are created when Tracing is given.
//
// A blocking call is the same pipeline with nobody consuming events; there
// is one loop. Streams yield text through every tool round; breaking out of
// the loop cancels the model call.
//
// # A person in the loop
//
// [Approval] takes a tool.Approver — per tool never, always, or a
// condition over the arguments (tool.Approvals, tool.Always, tool.When) —
// and pauses a turn before the calls it picks: the round's other calls
// run, and the turn ends with Outcome.Interrupt (EventInterrupt when
// streamed; an [*InterruptError] from Func, Bind and StreamFunc) listing
// the waiting calls with their ids, names and arguments. Nothing waits in
// the process: with a memory the assistant message with the calls (its
// record named after the interrupt) and the results of the calls that ran
// are stored as the turn ends, so the conversation is the checkpoint and
// any process can resume; without one, Outcome.Messages carry them for
// the caller's History. A Turn without a Message whose Decisions answer
// every waiting call resumes: [Approve] runs a call, [Edit] runs it with
// arguments checked against the tool's JSON Schema first, [Reject] answers
// the model, as the tool's error result, with the reason. Bad decisions
// are a [*DecisionError] before anything runs or is stored: an unknown
// call (ErrUnknownCall), one answered already (ErrResolved, with the
// stored answer and the turn that stored it), arguments that do not fit
// (a *tool.ArgumentError naming the field). The answers are stored, named
// after the resuming turn (ID-r<i>), before the model is called: a second
// resume finds them and runs nothing, and concurrent resumes of one
// conversation are serialised by its lease, so exactly one runs the calls.
// A typed call resumes with the same function, argument and a context
// from [Resume].
//
// # Defaults
//
// Tool rounds: 10 ([DefaultMaxToolRounds]). Tool failures, unknown tools and
// bad arguments: answered to the model (tool.ToModel). Tool results: capped
// at 64 KiB. Immediate return: when every call of a round asks for it.
// Parse re-prompts: 1. Output guardrail re-prompts: 2. Memory stores the
// original user message. Retrieval failures degrade. With output
// guardrails, streams hold the final answer back until it passed
// ([GuardBuffer]); [GuardAfter] streams first and checks after. No tracing
// and no listeners: nothing is allocated for them.
//
// # Validation
//
// Everything that can be known before the first call is checked when a
// function is declared: templates against the argument type, the return
// type's schema, duplicate or invalid tool names, a MemoryID without
// memory, a streaming declaration on a model that cannot stream, tools on a
// model without tool support.
//
// # For LangChain4j users
//
// The AiServices vocabulary, in Go (docs/langchain4j.md has the full table):
//
//	AiServices interface, @SystemMessage, @UserMessage   Func, Bind; System, User (or struct tags)
//	@MemoryId, ChatMemoryProvider                         a MemoryID argument; MemoryPerID
//	dynamicMaxMessages (a window per memory ID)           MemoryPerID(memory.PerID(func(id string) memory.Window))
//	@ToolMemoryId                                         tool.MemoryID(ctx) in the tool
//	@P(defaultValue = …)                                  a `default:"…"` tag on the tool's parameter
//	hallucinatedToolNameStrategy                          UnknownToolAnswer (and UnknownTools for the policy)
//	a fixed Clock for {{current_date}}                    Clock
//
// # The engine
//
// [Engine] is the untyped core, for servers that assemble turns themselves
// (the Weft platform does): give it a model and options once, then run
// [Turn] values with a system prompt, a user message (or the results of
// the caller's tools), and a memory, history the caller keeps, or both
// (the history is the caller's and the turn is stored in the memory);
// [Engine.Run] yields events and [Engine.Do] returns the [Outcome], whose
// Messages are the turn's new messages. With a memory the engine owns the
// turn: it holds the conversation, recalls, runs the tool loop and stores
// every message, also of a failed turn, under ids derived from Turn.ID. A
// tool that delegates to another agent passes that agent's events on with
// [Forward], so tokens stream through delegation.
package ai

// Package workflow runs workflows: typed, durable directed acyclic graphs
// of model calls, agent turns, knowledge recall, tools, HTTP requests,
// conditions, iterations, templates and people, written as data (JSON or YAML) and
// checked when they are saved rather than when they run.
//
// A [Definition] is parsed with [Parse] and checked with
// [Definition.Validate]: cycles, unknown nodes, unreachable ends, and every
// {{ reference }} against the outputs of the node it names, so a typo or a
// type mismatch is a [*ValidationError] naming the node and the field.
// Conditions are expr-lang expressions, compiled and type-checked then.
//
//	name: triage
//	nodes:
//	  - {id: start, kind: start, inputs: {ticket: {type: string}}}
//	  - id: classify
//	    kind: llm
//	    model: openai/gpt-4o-mini
//	    prompt: "Classify this ticket: {{inputs.ticket}}"
//	    output_schema: {type: object, properties: {label: {type: string}}}
//	  - id: route
//	    kind: condition
//	    cases: [{when: 'nodes.classify.outputs.label == "bug"', next: [file]}]
//	    else: [answer]
//	  …
//
// An [Engine] runs definitions with injected [Services] (models, agents,
// knowledge, tools, an HTTP client): the package itself reaches nothing
// outside the process. [Engine.Run] yields [Event]s as the run goes:
// independent branches run concurrently, joins wait for their inputs, each
// node has its timeout, retry policy and failure policy (fail the run,
// continue with default outputs, or take an error branch), and cancelling
// the context cancels the run. Node kinds can be added from Go functions
// with [Func].
//
// A run is bounded by its engine's [Limits] (see [WithLimits]): at most
// [DefaultNodeRuns] node runs (an iteration counts its items times its
// nodes, and one that would go over fails before its first item),
// [DefaultRunBytes] of node inputs and outputs in all (counted as each
// node finishes, before it is checkpointed), and conditions that evaluate
// for at most [DefaultConditionTime] over at most [DefaultConditionBytes]
// of values. A node's outputs and an iteration's results, counted as its
// items finish, are at most [MaxValueSize] bytes; an iteration runs over
// at most [MaxItems] items. Conditions run under a guard: the evaluation
// stops when its time is up or the run is cancelled, and what it makes
// is bounded (see [Limits]). [Parallelism] bounds the nodes of a run that
// run at once. A node that reaches a limit fails with an error wrapping
// [ErrLimit].
//
// A run given a [Checkpointer] and a run ID is durable: each finished
// node is checkpointed before the nodes after it start, and running the
// same run ID again resumes it, restoring finished nodes instead of
// running them. A node with effects outside the run (agent, tool, http,
// Func kinds) that started and never finished is run again only when it
// is marked idempotent.
//
// # A person in the loop
//
// A human node ([KindHuman]: a message template, the answer's schema, a
// timeout with a timeout branch) and a Go node calling [Pause] stop the
// run for a person. Nothing waits in the process: the question is
// checkpointed as an open [Interrupt], the rest of the run goes as far as
// it can without the node, and the run ends with WorkflowWaiting (the
// run's status is waiting; [Result].Waiting lists its interrupts). Running
// the run again [WithAnswer] checks the answer against the interrupt's
// schema (an [*AnswerError] naming the field leaves the run waiting, as
// do answers to unknown, answered or expired interrupts) and resumes:
// finished nodes are restored and never run again, nodes that still wait
// stay so without running — pauses on parallel branches are answered one
// by one, and a join waits for both — and the answered node runs again
// from its first line: a human node takes the answer as its outputs, a Go
// node's Pause returns it, and the work before it that must not repeat
// goes through [Step], whose result is checkpointed once. Deadlines are
// checked against the engine's [Clock] when a run runs; a run after one
// takes the timeout branch. Checkpoints hold one result each (a node's
// outputs, a Step's result, an answer), never the run's state, and go
// with the run ([MemoryCheckpointer.Delete]).
package workflow

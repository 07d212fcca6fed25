package ai

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/weftlabs/weft/guardrail"
	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/memory"
	"github.com/weftlabs/weft/memory/facts"
	"github.com/weftlabs/weft/rag"
	"github.com/weftlabs/weft/tool"
)

// Option configures an [Engine], a [Func] or the functions of a [Bind].
type Option func(*config) error

// Defaults of the pipeline.
const (
	// DefaultMaxToolRounds bounds the model calls that request tools in one
	// turn.
	DefaultMaxToolRounds = 10
	// DefaultParseRetries is how many times an answer that does not parse
	// into the declared type is sent back to the model with the error.
	DefaultParseRetries = 1
	// DefaultOutputRetries is how many times output guardrails may re-prompt.
	DefaultOutputRetries = 2
)

// ImmediateMode says when tool results end a turn without another model
// call (see [tool.Immediate]).
type ImmediateMode uint8

// The immediate-return modes.
const (
	// ImmediateAll returns when every call of a round asked for it (default).
	ImmediateAll ImmediateMode = iota
	// ImmediateLast returns when the last call of a round asked for it.
	ImmediateLast
	// ImmediateNever always calls the model again.
	ImmediateNever
)

// GuardedStreaming says how a stream behaves when output guardrails are
// configured.
type GuardedStreaming uint8

// The guarded-streaming modes.
const (
	// GuardBuffer holds the final answer's text until the output guardrails
	// passed it, then sends it as one text event: what the caller sees is
	// always checked, re-prompts and rewrites work, but the final answer
	// does not stream token by token (text before tool calls still does).
	// This is the default.
	GuardBuffer GuardedStreaming = iota
	// GuardAfter streams the answer as it is produced and checks it at the
	// end: a failing check ends the stream with an error, but the text is
	// already out; a re-prompt counts as a failure, and a rewrite reaches
	// only the Outcome.
	GuardAfter
)

// SystemProvider returns the system message for a memory ID.
type SystemProvider func(ctx context.Context, memoryID string) (string, error)

// RequestTransformer changes a request before each model call, tool rounds
// included. memoryID is the turn's memory ID, or "".
type RequestTransformer func(ctx context.Context, req *llm.Request, memoryID string) error

type config struct {
	model     llm.ChatModel
	caps      llm.Capabilities
	system    *string
	user      *string
	systemFor SystemProvider
	memory    *memory.Chats
	chat      *memory.Chat
	tools     []tool.Tool
	exec      tool.Executor
	approver  tool.Approver
	maxRounds int
	immediate ImmediateMode

	augmentor      rag.Augmentor
	augmentFatal   bool
	storeAugmented bool

	facts       *facts.Memory
	factsTenant string
	factsBudget int

	inGuards    []guardrail.Input
	outGuards   []guardrail.Output
	outRetries  int
	guardStream GuardedStreaming

	moderator    llm.ModerationModel
	transform    RequestTransformer
	listeners    []Listener
	tracer       trace.Tracer
	parseRetries int
	params       Params
	clock        func() time.Time
}

func newConfig(model llm.ChatModel, opts []Option) (*config, error) {
	c := &config{
		model:        model,
		maxRounds:    DefaultMaxToolRounds,
		parseRetries: DefaultParseRetries,
		outRetries:   DefaultOutputRetries,
	}
	var errs []error
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(c); err != nil {
			errs = append(errs, err)
		}
	}
	if c.model == nil {
		errs = append(errs, errors.New("ai: no model: pass an llm.ChatModel (for example from provider.Open), or ai.Model(m) to Bind"))
	} else if r, ok := c.model.(llm.CapabilityReporter); ok {
		c.caps = r.Capabilities()
	} else {
		c.caps = llm.Capabilities{Tools: true, Streaming: true}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, nil
}

// Model sets the model: the one option Bind requires (Func and NewEngine
// take the model as their first argument, and this overrides it).
func Model(m llm.ChatModel) Option {
	return func(c *config) error { c.model = m; return nil }
}

// System sets the system message template, rendered over the call's
// argument (see package prompt). In a Bind, a `system` struct tag on a
// function field overrides it.
func System(template string) Option {
	return func(c *config) error { c.system = &template; return nil }
}

// User sets the user message template, rendered over the call's argument.
// Without one, a string argument is the user message. In a Bind, a `user`
// struct tag overrides it.
func User(template string) Option {
	return func(c *config) error { c.user = &template; return nil }
}

// SystemFor sets a provider of the system message per memory ID, used when
// no System template is given.
func SystemFor(p SystemProvider) Option {
	return func(c *config) error { c.systemFor = p; return nil }
}

// MemoryPerID gives each memory ID its own chat memory, for example
// memory.MessageWindow(20). A call's memory ID comes from an argument of
// type [MemoryID]; a function without one, or a call with an empty one,
// uses no memory. A turn holds its conversation from start to end (a
// stream until it ends or the consumer breaks out of it), so concurrent
// turns on one ID run one after the other (see memory.Chat.Begin).
func MemoryPerID(chats *memory.Chats) Option {
	return func(c *config) error {
		if chats == nil {
			return errors.New("ai: MemoryPerID(nil)")
		}
		c.memory = chats
		return nil
	}
}

// Memory gives every call the one chat memory m (a single conversation),
// for calls without a [MemoryID].
func Memory(m *memory.Chat) Option {
	return func(c *config) error {
		if m == nil {
			return errors.New("ai: Memory(nil)")
		}
		c.chat = m
		return nil
	}
}

// Tools adds tools the model may call. Names must be unique.
func Tools(tools ...tool.Tool) Option {
	return func(c *config) error { c.tools = append(c.tools, tools...); return nil }
}

// MaxToolRounds bounds the model calls that request tools in one turn
// (default 10). Reaching it fails the turn with a *ToolRoundsError that
// carries the partial outcome.
func MaxToolRounds(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return errors.New("ai: MaxToolRounds must be at least 1")
		}
		c.maxRounds = n
		return nil
	}
}

// ToolErrors sets what happens when a tool fails or panics (default
// tool.ToModel: the model sees the error and the turn goes on).
func ToolErrors(p tool.Policy) Option {
	return func(c *config) error { c.exec.OnError = p; return nil }
}

// UnknownTools sets what happens when the model calls a tool that does not
// exist (default tool.ToModel: the model is told which tools exist).
func UnknownTools(p tool.Policy) Option {
	return func(c *config) error { c.exec.OnUnknown = p; return nil }
}

// UnknownToolAnswer sets what the model is told when it calls a tool that
// does not exist (LangChain4j's hallucinatedToolNameStrategy): the text
// answer returns for the name the model used and the tools there are. By
// default the model is told the tool does not exist and which ones do. The
// UnknownTools policy still decides whether the turn goes on.
func UnknownToolAnswer(answer func(name string, tools *tool.Set) string) Option {
	return func(c *config) error { c.exec.UnknownAnswer = answer; return nil }
}

// BadToolArguments sets what happens when a tool's arguments do not decode
// (default tool.ToModel: the model is told which field is wrong).
func BadToolArguments(p tool.Policy) Option {
	return func(c *config) error { c.exec.OnBadArguments = p; return nil }
}

// MaxToolResultBytes caps each tool result the model sees (default
// tool.DefaultMaxResultBytes; negative: no cap).
func MaxToolResultBytes(n int) Option {
	return func(c *config) error { c.exec.MaxResultBytes = n; return nil }
}

// ImmediateReturn sets when immediate tool results end the turn (default
// ImmediateAll).
func ImmediateReturn(m ImmediateMode) Option {
	return func(c *config) error { c.immediate = m; return nil }
}

// Augmentor sets the retrieval hook (see package rag). Its sources end in
// the outcome's Sources. A failing augmentor is reported to listeners and
// the turn goes on without augmentation, unless fatal is true.
func Augmentor(a rag.Augmentor, fatal bool) Option {
	return func(c *config) error { c.augmentor, c.augmentFatal = a, fatal; return nil }
}

// StoreAugmented makes memory keep the user message as it was sent to the
// model (augmented, rewritten by input guardrails) instead of the original
// (the default).
func StoreAugmented(on bool) Option {
	return func(c *config) error { c.storeAugmented = on; return nil }
}

// InputGuardrails adds guardrails run on the (augmented) user message.
func InputGuardrails(gs ...guardrail.Input) Option {
	return func(c *config) error { c.inGuards = append(c.inGuards, gs...); return nil }
}

// OutputGuardrails adds guardrails run on the final answer; retries bounds
// their re-prompts (DefaultOutputRetries when negative).
func OutputGuardrails(retries int, gs ...guardrail.Output) Option {
	return func(c *config) error {
		if retries >= 0 {
			c.outRetries = retries
		}
		c.outGuards = append(c.outGuards, gs...)
		return nil
	}
}

// GuardStreaming chooses how streams behave under output guardrails
// (default GuardBuffer).
func GuardStreaming(m GuardedStreaming) Option {
	return func(c *config) error { c.guardStream = m; return nil }
}

// Moderation checks the user message with m concurrently with the model
// call; a flagged input fails the call with a *ModerationError. The verdict
// is checked after each model call and awaited before the turn completes;
// a stream may show text before a flagged verdict ends it with the error.
func Moderation(m llm.ModerationModel) Option {
	return func(c *config) error {
		if m == nil {
			return errors.New("ai: Moderation(nil)")
		}
		c.moderator = m
		return nil
	}
}

// TransformRequest sets a function applied to every request before it is
// sent, tool rounds included.
func TransformRequest(f RequestTransformer) Option {
	return func(c *config) error { c.transform = f; return nil }
}

// Listen adds a listener of the pipeline's notices.
func Listen(l Listener) Option {
	return func(c *config) error {
		if l != nil {
			c.listeners = append(c.listeners, l)
		}
		return nil
	}
}

// Tracing creates OpenTelemetry spans with gen_ai.* attributes from tp
// (pass otel.GetTracerProvider() for the global one). Without it no span is
// created and tracing costs nothing.
func Tracing(tp trace.TracerProvider) Option {
	return func(c *config) error {
		if tp != nil {
			c.tracer = tp.Tracer("github.com/weftlabs/weft/ai")
		}
		return nil
	}
}

// ParseRetries sets how many times an answer that does not parse into the
// declared type is sent back to the model with the error (default 1).
func ParseRetries(n int) Option {
	return func(c *config) error { c.parseRetries = max(n, 0); return nil }
}

// Defaults sets model parameters for every call; a [Params] argument
// overrides them per call.
func Defaults(p Params) Option {
	return func(c *config) error { c.params = p; return nil }
}

// Clock sets the clock of the templates' date and time functions
// ({{currentDate}}, {{currentTime}}, {{currentDateTime}}, {{now}}; see
// package prompt), by default time.Now: pin it to test a function whose
// prompt names the date. It applies to Func and Bind, which render
// templates; an Engine renders none and refuses it.
func Clock(now func() time.Time) Option {
	return func(c *config) error {
		if now == nil {
			return errors.New("ai: Clock(nil)")
		}
		c.clock = now
		return nil
	}
}

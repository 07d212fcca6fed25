package memory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/tokens"
)

// Defaults of a [Summarizer].
const (
	// DefaultSummaryThreshold is how many tokens of records must have slid
	// out of a window, unfolded, before they are folded into the summary.
	DefaultSummaryThreshold = 1024
	// DefaultSummaryMaxTokens bounds the summary the model writes.
	DefaultSummaryMaxTokens = 512
)

// DefaultSummaryPrompt is the system prompt of the summarizer's model
// calls. The call's user message holds the previous summary and the
// records to fold in.
const DefaultSummaryPrompt = `You keep the running summary of a conversation between a user and an assistant. Messages that no longer fit the assistant's context window are folded into it, so that what they said is not lost.

Write the new summary: the previous summary with the new messages folded in. Keep every fact the user gave about themselves and their situation (names, places, dates, numbers, preferences, decisions), what was agreed or done, and open questions and tasks; let newer messages correct older facts; drop greetings and small talk. Be concise: short sentences or bullet points, in the conversation's language. Answer with the summary alone.`

// Bounds of one fold.
const (
	// foldTimeout bounds one model call of a fold.
	foldTimeout = 2 * time.Minute
	// maxRecordText bounds the text of one record in a fold's request: a
	// long tool result is cut, not sent whole.
	maxRecordText = 4096
)

// Summarizer folds what slides out of chats' windows into their
// conversations' running summaries (see [Summary]), so that a long
// conversation keeps what its first turns said. Give it to chats with
// [WithSummary]; one Summarizer serves any number of chats.
//
// A fold runs after a turn, never during one: [Hold.End] stores the turn
// and returns, and when the records out of the window that the summary
// does not hold yet reach the threshold in tokens, a goroutine the
// Summarizer owns asks its model for the new summary and saves it. A fold
// that fails (a model that is down, a store that does not answer) changes
// nothing: the chat keeps its plain window, the records stay to be folded
// after a later turn, and the failure is reported to [OnSummary]. Folds
// are saved by compare-and-set on the summary's Through
// ([SummaryStore.SaveSummary]), so concurrent turns in other processes
// never fold a record twice; in one process, one fold per conversation
// runs at a time.
//
// [Summarizer.Wait] waits for the folds in flight; [Summarizer.Close]
// cancels them and refuses new ones. A Summarizer is safe for concurrent
// use.
type Summarizer struct {
	model     llm.ChatModel
	prompt    string
	threshold int
	maxTokens int
	listen    func(SummaryEvent)

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	running map[Key]bool
}

// SummaryOption configures a [Summarizer].
type SummaryOption func(*Summarizer)

// SummaryPrompt replaces [DefaultSummaryPrompt], the system prompt of the
// summarizer's model calls.
func SummaryPrompt(p string) SummaryOption { return func(s *Summarizer) { s.prompt = p } }

// SummaryThreshold sets how many tokens of unfolded records out of the
// window trigger a fold (default [DefaultSummaryThreshold]): the larger,
// the rarer the model calls. A fold sends at most four thresholds of
// records per model call.
func SummaryThreshold(n int) SummaryOption { return func(s *Summarizer) { s.threshold = n } }

// SummaryMaxTokens bounds the summary the model writes (default
// [DefaultSummaryMaxTokens]); it is the calls' MaxTokens.
func SummaryMaxTokens(n int) SummaryOption { return func(s *Summarizer) { s.maxTokens = n } }

// OnSummary sets the listener of the summarizer's folds: each new summary
// saved, and each fold that failed. It runs on the fold's goroutine.
func OnSummary(f func(SummaryEvent)) SummaryOption { return func(s *Summarizer) { s.listen = f } }

// SummaryEvent reports a fold: the summary it saved, or why it failed.
type SummaryEvent struct {
	// Key names the conversation.
	Key Key
	// Summary is the summary saved; zero when the fold failed.
	Summary Summary
	// Folded is how many records the fold added to the summary.
	Folded int
	// Err is why the fold failed; the chat keeps its plain window and the
	// records are folded after a later turn.
	Err error
}

// NewSummarizer returns a summarizer that writes summaries with model.
// It panics if model is nil, a programming error.
func NewSummarizer(model llm.ChatModel, opts ...SummaryOption) *Summarizer {
	if model == nil {
		panic("memory: NewSummarizer with a nil model")
	}
	s := &Summarizer{model: model, prompt: DefaultSummaryPrompt, threshold: DefaultSummaryThreshold,
		maxTokens: DefaultSummaryMaxTokens, running: map[Key]bool{}}
	for _, o := range opts {
		o(s)
	}
	if s.threshold < 1 {
		s.threshold = 1
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s
}

// Wait waits until the folds started so far have ended.
func (s *Summarizer) Wait() { s.wg.Wait() }

// Close cancels the folds in flight, waits for them to end, and starts no
// more: chats that use the summarizer keep their plain window. Their
// records stay unfolded (and, in a chat that trims, untrimmed).
func (s *Summarizer) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
}

// window returns the bounds to load a turn's records with: w's and, past
// them, what a fold may need, so that a turn usually holds the records a
// fold reads: a threshold more tokens for a token window, twice the
// messages for a message window.
func (s *Summarizer) window(w Window) Window {
	switch {
	case w.MaxTokens > 0:
		return Window{MaxTokens: w.MaxTokens + s.threshold}
	case w.MaxMessages > 0:
		return Window{MaxMessages: 2 * w.MaxMessages}
	}
	return w
}

// fold is the work of one fold: the records of key after prev.Through and
// before before, of which recs (oldest first) were loaded by the turn.
type fold struct {
	store   SummaryStore
	trim    Trimmer // nil when the chat keeps all
	key     Key
	counter tokens.Counter
	prev    Summary
	before  int64
	recs    []Record
	// complete says recs start right after prev.Through; sure that they
	// reach the threshold.
	complete, sure bool
}

// start runs f on a goroutine of its own, unless the summarizer is closed
// or a fold of the same conversation runs.
func (s *Summarizer) start(f *fold) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.running[f.key] {
		return
	}
	s.running[f.key] = true
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() {
			s.mu.Lock()
			delete(s.running, f.key)
			s.mu.Unlock()
		}()
		s.run(f)
	}()
}

// run folds f's records into the summary, one model call per batch of at
// most four thresholds of tokens, oldest first. A batch it does not hold
// it loads with LoadRange.
func (s *Summarizer) run(f *fold) {
	chunk := 4 * s.threshold
	prev := f.prev
	pending := f.recs
	for first := true; prev.Through+1 < f.before; first = false {
		var batch []Record
		if f.complete {
			batch, pending = cut(pending, chunk)
		} else {
			var err error
			if batch, err = f.store.LoadRange(s.ctx, f.key, prev.Through, f.before, chunk); err != nil {
				s.report(SummaryEvent{Key: f.key, Err: fmt.Errorf("memory: fold %s: %w", f.key, err)})
				return
			}
		}
		if len(batch) == 0 {
			return // deleted or trimmed meanwhile
		}
		last := batch[len(batch)-1].Seq
		if first && !f.sure && Tokens(batch) < s.threshold && last+1 >= f.before {
			return // below the threshold after all
		}
		text, err := s.summarize(prev.Text, batch)
		if err != nil {
			s.report(SummaryEvent{Key: f.key, Err: fmt.Errorf("memory: fold %s: %w", f.key, err)})
			return
		}
		next := Summary{Text: text, Through: last}
		next.Tokens = f.counter.Count(next.context())
		ok, err := f.store.SaveSummary(s.ctx, f.key, next, prev.Through)
		if err != nil {
			s.report(SummaryEvent{Key: f.key, Err: fmt.Errorf("memory: fold %s: %w", f.key, err)})
			return
		}
		if !ok {
			return // another fold won, or the conversation is gone
		}
		s.report(SummaryEvent{Key: f.key, Summary: next, Folded: len(batch)})
		if f.trim != nil {
			if err := f.trim.Trim(s.ctx, f.key, last+1); err != nil {
				s.report(SummaryEvent{Key: f.key, Err: fmt.Errorf("memory: trim %s after a fold: %w", f.key, err)})
			}
		}
		prev = next
	}
}

// cut returns the first records of recs whose tokens fit max (at least
// one), and the rest.
func cut(recs []Record, max int) (head, rest []Record) {
	n, sum := 0, 0
	for n < len(recs) {
		sum += recs[n].Tokens
		if sum > max && n > 0 {
			break
		}
		n++
	}
	return recs[:n], recs[n:]
}

func (s *Summarizer) report(ev SummaryEvent) {
	if s.listen != nil {
		s.listen(ev)
	}
}

// summarize asks the model for the summary of prev followed by recs.
func (s *Summarizer) summarize(prev string, recs []Record) (string, error) {
	ctx, cancel := context.WithTimeout(s.ctx, foldTimeout)
	defer cancel()
	req := &llm.Request{
		Messages:  []llm.Message{llm.SystemMessage(s.prompt), llm.UserMessage(foldRequest(prev, recs))},
		MaxTokens: s.maxTokens,
	}
	resp, err := s.model.Generate(ctx, req)
	if err != nil {
		return "", err
	}
	text := strings.TrimSpace(resp.Message.Text())
	if text == "" {
		return "", errors.New("the model wrote an empty summary")
	}
	return text, nil
}

// foldRequest renders the user message of a fold: the previous summary,
// then the records, one per paragraph, each headed by who said it.
func foldRequest(prev string, recs []Record) string {
	var b strings.Builder
	b.WriteString("Previous summary:\n<summary>\n")
	if prev == "" {
		b.WriteString("(none yet)")
	} else {
		b.WriteString(prev)
	}
	b.WriteString("\n</summary>\n\nMessages to fold in, oldest first:\n<messages>\n")
	for _, r := range recs {
		m := r.Message
		switch {
		case m.Role == llm.RoleTool:
			fmt.Fprintf(&b, "[tool result of %s]\n", m.Name)
		case len(m.ToolCalls) > 0:
			b.WriteString("[assistant, calling tools]\n")
		default:
			fmt.Fprintf(&b, "[%s]\n", m.Role)
		}
		if t := m.Text(); t != "" {
			b.WriteString(clip(t))
			b.WriteByte('\n')
		}
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, "%s(%s)\n", c.Name, clip(c.Arguments))
		}
		b.WriteByte('\n')
	}
	b.WriteString("</messages>")
	return b.String()
}

// clip cuts s to maxRecordText bytes, at a rune boundary.
func clip(s string) string {
	if len(s) <= maxRecordText {
		return s
	}
	n := maxRecordText
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + " […]"
}

package openai

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/weftlabs/weft/llm"
)

// errorBody reads a non-2xx answer's body into e: the message and code of
// the provider's error object, and the kind they tell.
func (c *Client) errorBody(e *llm.Error, resp *http.Response, b []byte) {
	msg, typ, code, ok := parseErrorBody(b)
	if ok {
		e.Message = msg
		e.Code = firstNonEmpty(code, typ)
	} else if len(b) > 0 {
		e.Message = "non-JSON error body: " + snippet(b)
	}
	if k := refineKind(msg, typ, code); k != nil {
		e.Kind = k
	}
	if resp.StatusCode == http.StatusNotFound && e.Message == http.StatusText(http.StatusNotFound) {
		e.Message = "endpoint or model not found: check the base URL " + c.baseURL + " and the model " + c.model
	}
}

// parseErrorBody reads {"error": {"message","type","code"}}, the
// {"error": "text"} form, and top-level fields as vLLM and FastAPI send.
func parseErrorBody(b []byte) (msg, typ, code string, ok bool) {
	var body errorBody
	if json.Unmarshal(b, &body) != nil {
		return "", "", "", false
	}
	if body.Error.present {
		return body.Error.Message, body.Error.Type, string(body.Error.Code), true
	}
	msg = firstNonEmpty(body.Message, body.Detail)
	if msg == "" && body.Type == "" && body.Code == "" {
		return "", "", "", false
	}
	return msg, body.Type, string(body.Code), true
}

// refineKind recognises error kinds that the status alone does not tell,
// from the provider's code, type and message. It returns nil when nothing
// is recognised.
func refineKind(msg, typ, code string) error {
	lc := strings.ToLower(code + " " + typ)
	lm := strings.ToLower(msg)
	switch {
	case strings.Contains(lc, "context_length_exceeded") || strings.Contains(lc, "string_above_max_length") ||
		containsAny(lm, "maximum context length", "context length exceeded", "context_length_exceeded",
			"context window", "prompt is too long", "too many tokens", "reduce the length of the messages",
			"exceeds the model's context", "input is too long"):
		return llm.ErrContextTooLong
	case strings.Contains(lc, "content_filter") || strings.Contains(lc, "content_policy") ||
		containsAny(lm, "content management policy", "content_filter", "content policy"):
		return llm.ErrContentFiltered
	case strings.Contains(lc, "insufficient_quota"):
		// A 429 that waiting does not cure: the account is out of credit.
		return llm.ErrAuthentication
	case strings.Contains(lc, "invalid_api_key") || strings.Contains(lc, "authentication"):
		return llm.ErrAuthentication
	case strings.Contains(lc, "rate_limit"):
		return llm.ErrRateLimited
	}
	return nil
}

// streamErrorKind classifies an error payload that arrived inside a 200
// stream or body: a recognised code, type or message, else an HTTP status
// sent as the code, else fallback.
func streamErrorKind(msg, typ, code string, fallback error) error {
	if k := refineKind(msg, typ, code); k != nil {
		return k
	}
	if n, err := strconv.Atoi(code); err == nil && n >= 400 && n <= 599 {
		return llm.KindForStatus(n)
	}
	if containsAny(strings.ToLower(typ+" "+code), "server_error", "overloaded", "api_error", "internal_error", "unavailable") {
		return llm.ErrUnavailable
	}
	return fallback
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// maxSnippet bounds how much of a bad body an error message quotes.
const maxSnippet = 200

// snippet quotes the start of b for an error message.
func snippet(b []byte) string {
	if len(b) <= maxSnippet {
		return strconv.Quote(string(b))
	}
	cut := maxSnippet
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return strconv.Quote(string(b[:cut])) + "… (" + strconv.Itoa(len(b)) + " bytes)"
}

package llm

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The error kinds callers branch on with errors.Is. Every [*Error] matches
// exactly one of them.
var (
	// ErrAuthentication: the API key is missing, wrong or lacks permission (401, 403).
	ErrAuthentication = errors.New("authentication failed")
	// ErrRateLimited: the provider asked to slow down (429). See Error.RetryAfter.
	ErrRateLimited = errors.New("rate limited")
	// ErrContextTooLong: the request does not fit the model's context window.
	ErrContextTooLong = errors.New("context too long")
	// ErrContentFiltered: the provider refused the input or output by policy.
	ErrContentFiltered = errors.New("content filtered")
	// ErrBadRequest: the provider rejected the request as invalid (400, 404, 422).
	ErrBadRequest = errors.New("bad request")
	// ErrUnavailable: the provider could not be reached or failed (connection errors, 409, 5xx).
	ErrUnavailable = errors.New("provider unavailable")
	// ErrTimeout: the call's deadline passed, or the provider answered 408.
	ErrTimeout = errors.New("timeout")
	// ErrStreamBroken: a stream ended without completing (no finish reason, an
	// error sent after HTTP 200, or a malformed frame).
	ErrStreamBroken = errors.New("stream broken")
)

// ErrUnsupported reports that a model lacks an ability (embeddings,
// moderation, images, streaming, …).
var ErrUnsupported = errors.New("not supported by this model")

// Error is a failed model call. It matches its Kind with errors.Is and wraps
// the underlying cause, if any.
type Error struct {
	// Kind is one of the Err* sentinels of this package.
	Kind error
	// Provider names the provider ("openai", "anthropic", …).
	Provider string
	// StatusCode is the HTTP status, or 0 when there was none.
	StatusCode int
	// Code is the provider's own error code or type, when it sent one.
	Code string
	// Message is the provider's error message, or a description of the failure.
	Message string
	// RetryAfter is the delay the provider asked for, or 0.
	RetryAfter time.Duration
	// Err is the underlying cause, if any.
	Err error
}

// Error returns a message that names the provider, the kind and the cause.
func (e *Error) Error() string {
	var b strings.Builder
	if e.Provider != "" {
		b.WriteString(e.Provider)
		b.WriteString(": ")
	}
	if e.Kind != nil {
		b.WriteString(e.Kind.Error())
	} else {
		b.WriteString("model error")
	}
	if e.StatusCode > 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.StatusCode)
	}
	if e.Code != "" {
		fmt.Fprintf(&b, " [%s]", e.Code)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.Err != nil && (e.Message == "" || !strings.Contains(e.Message, e.Err.Error())) {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Is reports whether target is e's Kind.
func (e *Error) Is(target error) bool { return target != nil && e.Kind == target }

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether repeating the call may succeed: connection
// failures, 408, 409, 429 and 5xx answers, and broken streams. It never
// retries a caller's own deadline or cancellation.
func (e *Error) Retryable() bool {
	switch e.Kind {
	case ErrRateLimited, ErrUnavailable, ErrStreamBroken:
		return true
	case ErrTimeout:
		// A timeout the server reported (408, 504) may pass; a local deadline will not.
		return e.StatusCode != 0
	}
	return false
}

// IsRetryable reports whether err is an [*Error] that a retry may cure.
func IsRetryable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Retryable()
}

// KindForStatus maps an HTTP status to an error kind.
func KindForStatus(status int) error {
	switch {
	case status == 401 || status == 403:
		return ErrAuthentication
	case status == 429:
		return ErrRateLimited
	case status == 408 || status == 504:
		return ErrTimeout
	case status == 409 || status >= 500:
		return ErrUnavailable
	case status == 413:
		return ErrContextTooLong
	default:
		return ErrBadRequest
	}
}

// ParseRetryAfter reads the delay a response asks for from Retry-After-Ms
// (milliseconds) or Retry-After (seconds or an HTTP date). It returns 0 when
// neither is present or valid.
func ParseRetryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

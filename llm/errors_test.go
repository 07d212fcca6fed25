package llm

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"
)

func TestErrorKindsMatch(t *testing.T) {
	t.Parallel()
	kinds := []error{ErrAuthentication, ErrRateLimited, ErrContextTooLong, ErrContentFiltered, ErrBadRequest, ErrUnavailable, ErrTimeout, ErrStreamBroken}
	cause := errors.New("the cause")
	for _, kind := range kinds {
		e := &Error{Kind: kind, Provider: "p", Err: cause}
		wrapped := fmt.Errorf("calling model: %w", e)
		for _, other := range kinds {
			if got := errors.Is(wrapped, other); got != (other == kind) {
				t.Errorf("errors.Is(%v, %v) = %v", kind, other, got)
			}
		}
		if !errors.Is(wrapped, cause) {
			t.Errorf("%v: cause not reachable", kind)
		}
		var as *Error
		if !errors.As(wrapped, &as) || as != e {
			t.Errorf("%v: errors.As failed", kind)
		}
	}
	if (&Error{}).Is(nil) {
		t.Error("an Error matched nil")
	}
}

func TestErrorMessage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  *Error
		want string
	}{
		{&Error{Kind: ErrRateLimited, Provider: "openai", StatusCode: 429, Code: "rate_limit_exceeded", Message: "slow down"},
			"openai: rate limited (HTTP 429) [rate_limit_exceeded]: slow down"},
		{&Error{Kind: ErrUnavailable, Err: errors.New("connection refused")}, "provider unavailable: connection refused"},
		{&Error{Kind: ErrUnavailable, Message: "dial: connection refused", Err: errors.New("connection refused")}, "provider unavailable: dial: connection refused"},
		{&Error{Message: "odd"}, "model error: odd"},
		{&Error{Kind: ErrTimeout, StatusCode: -1, Message: "no answer within 1s"}, "timeout: no answer within 1s"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestRetryable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want bool
	}{
		{&Error{Kind: ErrRateLimited}, true},
		{&Error{Kind: ErrUnavailable}, true},
		{&Error{Kind: ErrStreamBroken}, true},
		{&Error{Kind: ErrTimeout, StatusCode: 408}, true},
		{&Error{Kind: ErrTimeout, StatusCode: -1}, true}, // the model's own per-attempt timeout
		{&Error{Kind: ErrTimeout}, false},                // the caller's deadline
		{&Error{Kind: ErrAuthentication}, false},
		{&Error{Kind: ErrBadRequest}, false},
		{&Error{Kind: ErrContextTooLong}, false},
		{&Error{Kind: ErrContentFiltered}, false},
		{fmt.Errorf("wrapped: %w", &Error{Kind: ErrUnavailable}), true},
		{errors.New("plain"), false},
		{nil, false},
	}
	for _, tt := range tests {
		if got := IsRetryable(tt.err); got != tt.want {
			t.Errorf("IsRetryable(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestKindForStatus(t *testing.T) {
	t.Parallel()
	tests := map[int]error{
		400: ErrBadRequest, 401: ErrAuthentication, 403: ErrAuthentication, 404: ErrBadRequest,
		408: ErrTimeout, 409: ErrUnavailable, 413: ErrContextTooLong, 422: ErrBadRequest,
		429: ErrRateLimited, 500: ErrUnavailable, 502: ErrUnavailable, 503: ErrUnavailable,
		504: ErrTimeout, 529: ErrUnavailable,
	}
	for status, want := range tests {
		if got := KindForStatus(status); got != want {
			t.Errorf("KindForStatus(%d) = %v, want %v", status, got, want)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
	}{
		{"none", nil, 0},
		{"seconds", map[string]string{"Retry-After": "3"}, 3 * time.Second},
		{"fractional seconds", map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond},
		{"milliseconds win", map[string]string{"Retry-After-Ms": "250", "Retry-After": "1"}, 250 * time.Millisecond},
		{"fractional milliseconds", map[string]string{"Retry-After-Ms": "1.5"}, 1500 * time.Microsecond},
		{"bad milliseconds fall back", map[string]string{"Retry-After-Ms": "soon", "Retry-After": "2"}, 2 * time.Second},
		{"http date", map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{"past date", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{"negative", map[string]string{"Retry-After": "-4"}, 0},
		{"garbage", map[string]string{"Retry-After": "tomorrow"}, 0},
	}
	for _, tt := range tests {
		h := http.Header{}
		for k, v := range tt.header {
			h.Set(k, v)
		}
		if got := ParseRetryAfter(h, now); got != tt.want {
			t.Errorf("%s: ParseRetryAfter = %v, want %v", tt.name, got, tt.want)
		}
	}
}

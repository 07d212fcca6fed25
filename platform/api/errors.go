package api

import "encoding/json"

// The stable error codes of the API (see docs/api.md, "Errors").
const (
	CodeInvalidRequest  = "invalid_request"
	CodeUnauthorized    = "unauthorized"
	CodeForbidden       = "forbidden"
	CodeNotFound        = "not_found"
	CodeConflict        = "conflict"
	CodeRateLimited     = "rate_limited"
	CodeModelError      = "model_error"
	CodeContextTooLong  = "context_too_long"
	CodePayloadTooLarge = "payload_too_large"
	CodeAgentDisabled   = "agent_disabled"
	CodeInternal        = "internal_error"
	CodeUnavailable     = "unavailable"
	CodeCancelled       = "cancelled"
)

// Error is the body of a failure: {"error": {"code", "message"}}.
type Error struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is what went wrong: a stable code and a message that names
// the offending field of a bad request; Param, when set, is that field's
// path (for a workflow definition: "nodes.ID.FIELD").
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Param   string `json:"param,omitempty"`
	// Answer is, on the 409 of an interrupt answered already, the answer
	// stored.
	Answer json.RawMessage `json:"answer,omitempty"`
}

package platform

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/platform/meta"
)

// The stable error codes of the API (see API.md, "Errors"), as package api
// defines them.
const (
	CodeInvalidRequest  = api.CodeInvalidRequest
	CodeUnauthorized    = api.CodeUnauthorized
	CodeForbidden       = api.CodeForbidden
	CodeNotFound        = api.CodeNotFound
	CodeConflict        = api.CodeConflict
	CodeRateLimited     = api.CodeRateLimited
	CodeModelError      = api.CodeModelError
	CodeContextTooLong  = api.CodeContextTooLong
	CodePayloadTooLarge = api.CodePayloadTooLarge
	CodeAgentDisabled   = api.CodeAgentDisabled
	CodeInternal        = api.CodeInternal
	CodeUnavailable     = api.CodeUnavailable
	CodeCancelled       = api.CodeCancelled
)

// MaxBodyBytes is the documented limit of a JSON request body (1 MiB).
// Larger bodies are answered 413 payload_too_large.
const MaxBodyBytes = 1 << 20

// apiError is an error with its HTTP status and stable code.
type apiError struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	// Param names the offending request field, for OpenAI's error shape.
	Param string `json:"-"`
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func errorf(status int, code, format string, args ...any) *apiError {
	return &apiError{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

func invalid(format string, args ...any) *apiError {
	return errorf(http.StatusBadRequest, CodeInvalidRequest, format, args...)
}

func notFound(what, id string) *apiError {
	return errorf(http.StatusNotFound, CodeNotFound, "%s %q not found", what, id)
}

// asAPIError maps any error to the API's error shape. Store "not found" and
// "conflict" keep their meaning; anything unknown is an internal error whose
// details stay in the log, not in the answer.
func asAPIError(err error) *apiError {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, meta.ErrNotFound):
		return errorf(http.StatusNotFound, CodeNotFound, "not found")
	case errors.Is(err, meta.ErrConflict):
		return errorf(http.StatusConflict, CodeConflict, "%s", strings.TrimPrefix(err.Error(), "meta: "))
	}
	return errorf(http.StatusInternalServerError, CodeInternal, "internal error")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

func writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.Status, api.Error{Error: api.ErrorDetail{Code: e.Code, Message: e.Message}})
}

// decodeJSON reads a JSON object body into v, within MaxBodyBytes. Unknown
// fields are ignored; a wrong type is a 400 that names the field.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) *apiError {
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	return decodeBody(r.Body, v)
}

func decodeBody(body io.Reader, v any) *apiError {
	dec := json.NewDecoder(body)
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if dec.More() {
		return invalid("request body must be a single JSON object")
	}
	return nil
}

func decodeError(err error) *apiError {
	var maxErr *http.MaxBytesError
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &maxErr):
		return errorf(http.StatusRequestEntityTooLarge, CodePayloadTooLarge, "request body exceeds the limit of %d bytes", maxErr.Limit)
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			return invalid("request body must be a JSON object, not %s", typeErr.Value)
		}
		return invalid("field %q: want %s, got %s", field, jsonType(typeErr.Type.Kind().String()), typeErr.Value)
	case errors.As(err, &syntaxErr):
		return invalid("malformed JSON at byte %d: %v", syntaxErr.Offset, syntaxErr)
	case errors.Is(err, io.EOF):
		return invalid("request body is empty; want a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return invalid("request body is truncated JSON")
	}
	return invalid("invalid request body: %v", err)
}

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "map", "struct", "ptr":
		return "an object"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	}
	return kind
}

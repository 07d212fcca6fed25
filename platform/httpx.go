package platform

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/weftlabs/weft/platform/api"
	"github.com/weftlabs/weft/platform/meta"
)

// The stable error codes of the API (see docs/api.md, "Errors"), as package api
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
	// cause is the error behind an internal error: logged, never answered.
	cause error
	// retryAfter, when positive, is sent as Retry-After (seconds).
	retryAfter int
	// answer is the stored answer of an interrupt answered already.
	answer json.RawMessage
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

// errorf makes an API error. Every error message the API answers is made
// here, so its text passes through the process's redactor here, once for
// every transport (see processSecrets).
func errorf(status int, code, format string, args ...any) *apiError {
	return &apiError{Status: status, Code: code, Message: processSecrets.Text(fmt.Sprintf(format, args...))}
}

// nameTaken is the 409 of a create or rename to a name the tenant already
// uses for another object of the kind (what: "an agent", "a tool", …); it
// names the field, so forms show it beside the name.
func nameTaken(what, name string) *apiError {
	e := errorf(http.StatusConflict, CodeConflict, "%s named %q already exists", what, name)
	e.Param = "name"
	return e
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
	e := errorf(http.StatusInternalServerError, CodeInternal, "internal error")
	e.cause = err
	return e
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// writeError answers e. The cause of an internal error goes to the request
// log line (see instrument), so that no 500 is left unexplained.
func writeError(w http.ResponseWriter, e *apiError) {
	if sw, ok := w.(*statusWriter); ok && e.cause != nil {
		sw.cause = e.cause
	}
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.retryAfter))
	}
	writeJSON(w, e.Status, api.Error{Error: api.ErrorDetail{Code: e.Code, Message: e.Message, Param: e.Param, Answer: e.answer}})
}

// decodeJSON reads a JSON object body into v, within MaxBodyBytes. Unknown
// fields are ignored; a wrong type is a 400 that names the field.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) *apiError {
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	return decodeBody(r.Body, v)
}

func decodeBody(body io.Reader, v any) *apiError {
	raw, err := io.ReadAll(body)
	if err != nil {
		return decodeError(err)
	}
	if e := checkJSONText(raw); e != nil {
		return e
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
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
		e := invalid("field %q: want %s, got %s", field, jsonType(typeErr.Type.Kind().String()), typeErr.Value)
		e.Param = field
		return e
	case errors.As(err, &syntaxErr):
		return invalid("malformed JSON at byte %d: %v", syntaxErr.Offset, syntaxErr)
	case errors.Is(err, io.EOF):
		return invalid("request body is empty; want a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return invalid("request body is truncated JSON")
	}
	return invalid("invalid request body: %v", err)
}

// checkText refuses text that PostgreSQL cannot store — a NUL byte or
// invalid UTF-8 — naming field, so that every store gives the same answer.
func checkText(field, s string) *apiError {
	switch {
	case strings.IndexByte(s, 0) >= 0:
		return invalid("field %q contains a NUL character (\\u0000), which cannot be stored", field)
	case !utf8.ValidString(s):
		return invalid("field %q is not valid UTF-8", field)
	}
	return nil
}

// checkJSONText applies checkText to every string of a JSON body, object
// keys included (encoding/json would turn invalid UTF-8 into U+FFFD
// silently). The walk runs only when the body holds a \u0000 escape or
// invalid UTF-8; malformed JSON is left to the decoder to report.
func checkJSONText(raw []byte) *apiError {
	if utf8.Valid(raw) && !bytes.Contains(raw, []byte(`\u0000`)) {
		return nil
	}
	type frame struct {
		obj     bool
		wantKey bool
		key     string
		idx     int
	}
	var stack []frame
	path := func() string {
		var b strings.Builder
		for _, f := range stack {
			switch {
			case f.obj && b.Len() > 0:
				b.WriteString("." + f.key)
			case f.obj:
				b.WriteString(f.key)
			default:
				b.WriteString("[" + strconv.Itoa(f.idx) + "]")
			}
		}
		return b.String()
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	for {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return nil // the end, or malformed JSON: Decode says which
		}
		span := raw[start:dec.InputOffset()] // the token, after a delimiter or spaces
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			continue
		}
		if str, ok := tok.(string); ok && top != nil && top.obj && top.wantKey {
			top.wantKey, top.key = false, str
			if e := checkText(path(), str); e != nil {
				return e
			}
			if !utf8.Valid(span) {
				return invalid("field %q: its name is not valid UTF-8", path())
			}
			continue
		}
		// A value.
		if top != nil {
			if top.obj {
				top.wantKey = true
			} else {
				top.idx++
			}
		}
		switch t := tok.(type) {
		case json.Delim:
			stack = append(stack, frame{obj: t == '{', wantKey: t == '{', idx: -1})
		case string:
			field := path()
			if field == "" {
				field = "(body)"
			}
			if e := checkText(field, t); e != nil {
				return e
			}
			if !utf8.Valid(span) {
				return checkText(field, string(span))
			}
		}
	}
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

package loader

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// budget is what is left of a document's decompression limit, shared by
// all the readers of one document (one goroutine).
type budget struct {
	left, limit int64
}

func newBudget(limit int64) *budget { return &budget{left: limit, limit: limit} }

func (b *budget) err() error {
	return fmt.Errorf("%w: decompresses to over %s (raise it with loader.WithMaxDecompressed)", ErrTooLarge, byteSize(b.limit))
}

// boundedReader reads r, counting the bytes against a budget: the read
// that goes past it fails with an error matching ErrTooLarge, so
// decompression stops there and nothing past the limit is produced. It
// also fails once ctx ends.
type boundedReader struct {
	ctx context.Context
	r   io.Reader
	b   *budget
}

func (br *boundedReader) Read(p []byte) (int, error) {
	if err := br.ctx.Err(); err != nil {
		return 0, fmt.Errorf("parsing stopped: %w", err)
	}
	if br.b.left < 0 {
		return 0, br.b.err()
	}
	if int64(len(p)) > br.b.left+1 {
		p = p[:br.b.left+1]
	}
	n, err := br.r.Read(p)
	br.b.left -= int64(n)
	if br.b.left < 0 {
		return n, br.b.err()
	}
	return n, err
}

// maxXMLToken bounds a run of XML between markup delimiters: a text node or
// a tag with its attributes. encoding/xml holds a whole token in memory.
const maxXMLToken = 1 << 20

// xmlTokenReader fails when more than maxXMLToken bytes pass without a '<'
// or '>', bounding what encoding/xml buffers for one token.
type xmlTokenReader struct {
	r   io.Reader
	run int
}

var errXMLToken = fmt.Errorf("%w: an XML token over %s", ErrTooLarge, byteSize(maxXMLToken))

func (x *xmlTokenReader) Read(p []byte) (int, error) {
	n, err := x.r.Read(p)
	for _, c := range p[:n] {
		if c == '<' || c == '>' {
			x.run = 0
		} else if x.run++; x.run > maxXMLToken {
			return n, errXMLToken
		}
	}
	return n, err
}

// limitError is the panic value that stops a third-party parser at a limit;
// recovered returns it as the error.
type limitError struct{ err error }

func (e limitError) Error() string { return e.err.Error() }
func (e limitError) Unwrap() error { return e.err }

// isLimit reports whether err is a limit or a cancellation, not damage.
func isLimit(err error) bool {
	return errors.Is(err, ErrTooLarge) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// Bounds of the PDF content scan (see pdfScan).
const (
	maxPDFToken    = 1 << 20 // a string, name or number
	maxPDFOperands = 1 << 16 // operands (array elements included) before an operator
)

var errPDFToken = fmt.Errorf("%w: a PDF content token over %s", ErrTooLarge, byteSize(maxPDFToken))
var errPDFOperands = fmt.Errorf("%w: over %d operands without an operator in a PDF content stream", ErrTooLarge, maxPDFOperands)

// pdfScan is a small lexer over a PDF content stream (or CMap), fed as the
// stream is checked, that bounds what the parser's own interpreter would
// hold in memory at once: the length of one token, and the operands piled
// on its stack before an operator takes them. Malformed syntax is not its
// business; it only counts.
type pdfScan struct {
	state    byte // 0 normal, '(' literal string, '<' hex string, '%' comment, 'l' after '<'
	depth    int  // parenthesis depth in a literal string
	escape   bool
	tok      int  // bytes of the current token
	word     bool // the current token starts with a letter: an operator
	operands int
}

func (s *pdfScan) Write(p []byte) (int, error) {
	for _, c := range p {
		if err := s.byte(c); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func (s *pdfScan) byte(c byte) error {
	switch s.state {
	case '(':
		if s.tok++; s.tok > maxPDFToken {
			return errPDFToken
		}
		switch {
		case s.escape:
			s.escape = false
		case c == '\\':
			s.escape = true
		case c == '(':
			s.depth++
		case c == ')':
			if s.depth--; s.depth == 0 {
				s.state, s.tok = 0, 0
			}
		}
		return nil
	case '<':
		if s.tok++; s.tok > 2*maxPDFToken {
			return errPDFToken
		}
		if c == '>' {
			s.state, s.tok = 0, 0
		}
		return nil
	case '%':
		if c == '\r' || c == '\n' {
			s.state = 0
		}
		return nil
	case 'l':
		s.state = 0
		if c != '<' { // a hex string, not a dictionary
			s.state, s.tok = '<', 1
			return s.operand()
		}
		return nil
	}
	switch c {
	case ' ', '\t', '\r', '\n', '\f', 0, '(', ')', '<', '>', '[', ']', '{', '}', '/', '%':
		if err := s.end(); err != nil {
			return err
		}
		switch c {
		case '(':
			s.state, s.depth, s.tok = '(', 1, 0
			return s.operand()
		case '<':
			s.state = 'l'
		case '%':
			s.state = '%'
		case '/':
			s.tok = 1 // a name: a token that is not an operator
		}
		return nil
	}
	if s.tok == 0 {
		s.word = c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '\'' || c == '"' || c == '*'
	}
	if s.tok++; s.tok > maxPDFToken {
		return errPDFToken
	}
	return nil
}

// end finishes the current token: an operator empties the stack, anything
// else is one more operand.
func (s *pdfScan) end() error {
	if s.tok == 0 {
		return nil
	}
	word := s.word
	s.tok, s.word = 0, false
	if word {
		s.operands = 0
		return nil
	}
	return s.operand()
}

func (s *pdfScan) operand() error {
	if s.operands++; s.operands > maxPDFOperands {
		return errPDFOperands
	}
	return nil
}

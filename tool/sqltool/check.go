package sqltool

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Drivers.
const (
	Postgres = "postgres"
	SQLite   = "sqlite"
)

// scanned is a statement with comments and literals removed.
type scanned struct {
	words  []string // keywords and identifiers outside literals, upper-cased
	params int      // highest placeholder number ($n, ?NNN) or count of ?
	named  bool     // a named placeholder (:x, @x, $x) was seen (SQLite)
	toks   []token  // the statement's tokens, for finding function calls
}

// token is a lexical token of a statement, as far as finding function calls
// needs: identifiers (unquoted ones folded to lower case as PostgreSQL
// folds them, quoted ones exact), the punctuation around calls, and
// anything else.
type token struct {
	kind byte // 'w' unquoted identifier or keyword, 'q' quoted identifier, 'p' punctuation, 'o' other
	text string
}

// call is a function call found in a statement: schema.name(…).
type call struct {
	schema, name string
}

// String returns the call's name as written (schema-qualified if it was).
func (c call) String() string {
	if c.schema != "" {
		return c.schema + "." + c.name
	}
	return c.name
}

// notCalls are the keywords that may stand before '(' without calling a
// function of that name: SQL syntax (IN (…), EXISTS (…), OVER (…)),
// expressions compiled to no function call (COALESCE, NULLIF, GREATEST,
// LEAST, CAST, ROW, ARRAY) and the special syntax of functions that
// PostgreSQL maps to immutable ones (EXTRACT, POSITION, SUBSTRING, TRIM,
// OVERLAY) or stable ones (CURRENT_TIMESTAMP(p) and kin).
var notCalls = map[string]bool{
	"select": true, "from": true, "where": true, "and": true, "or": true, "not": true, "in": true,
	"exists": true, "as": true, "on": true, "using": true, "join": true, "values": true, "over": true,
	"filter": true, "lateral": true, "array": true, "row": true, "cast": true, "coalesce": true,
	"nullif": true, "greatest": true, "least": true, "any": true, "all": true, "some": true, "case": true,
	"when": true, "then": true, "else": true, "by": true, "union": true, "intersect": true, "except": true,
	"distinct": true, "rollup": true, "cube": true, "grouping": true, "sets": true, "is": true, "like": true,
	"ilike": true, "similar": true, "to": true, "between": true, "with": true, "recursive": true,
	"limit": true, "offset": true, "fetch": true, "having": true, "window": true, "partition": true,
	"order": true, "group": true, "extract": true, "position": true, "substring": true, "trim": true,
	"overlay": true, "current_timestamp": true, "current_time": true, "localtime": true,
	"localtimestamp": true, "varying": true, "within": true, "escape": true, "returning": true,
}

// calls returns the function calls of a scanned statement: every
// identifier, quoted or not, optionally schema-qualified, that stands
// before '(' — except keywords of syntax (notCalls), type names after ::
// or AS (numeric(10,2), an alias's column list) and the names of WITH
// queries. It errs towards reporting too much: a name that is no function
// is then refused as unresolvable, never let through.
func (s *scanned) calls() []call {
	var out []call
	t := s.toks
	isIdent := func(i int) bool { return i >= 0 && (t[i].kind == 'w' || t[i].kind == 'q') }
	is := func(i int, kind byte, text string) bool { return i >= 0 && t[i].kind == kind && t[i].text == text }
	for k := 1; k < len(t); k++ {
		if !is(k, 'p', "(") || !isIdent(k-1) {
			continue
		}
		c, first := call{name: t[k-1].text}, k-1
		if is(k-2, 'p', ".") && isIdent(k-3) {
			c.schema, first = t[k-3].text, k-3
			if is(k-4, 'p', ".") && isIdent(k-5) {
				first = k - 5 // catalog.schema.name: the catalog can only be this database
			}
		}
		if c.schema == "" && t[k-1].kind == 'w' && notCalls[c.name] {
			continue
		}
		if is(first-1, 'p', "::") || is(first-1, 'w', "as") || is(first-1, 'w', "with") || is(first-1, 'w', "recursive") {
			continue // a type, an alias's column list, a WITH query's name
		}
		out = append(out, c)
	}
	return out
}

// foldIdent folds an unquoted identifier to lower case as PostgreSQL does
// (ASCII letters only).
func foldIdent(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// CheckQuery reports whether query is a single read-only statement that a
// SQL tool may run, without connecting to a database:
//
//   - one statement: no ';' outside literals and comments, except one at
//     the end;
//   - it starts with SELECT, WITH or VALUES (after any opening
//     parentheses);
//   - outside literals, quoted identifiers and comments, it holds none of
//     the words that write or take locks (INSERT, UPDATE, DELETE, MERGE,
//     INTO — which also rules out SELECT … INTO —, FOR SHARE, CREATE,
//     DROP, ALTER, TRUNCATE, COPY, GRANT, …), so a WITH clause cannot hide
//     a data-modifying statement;
//   - it calls none of the functions known to write, reach outside the
//     database or run SQL given as a string (set_config, nextval, setval,
//     dblink…, lo_…, pg_read_file, query_to_xml, pg_advisory_lock…,
//     pg_terminate_backend, load_extension, readfile, writefile, …).
//
// The check is conservative: a column named like one of those words must
// be double-quoted. It is a first line of defence — the statement also runs
// in a read-only transaction (PostgreSQL) or on a query_only connection
// (SQLite), which refuses writes done by functions the list does not know.
// On PostgreSQL the functions the statement calls are further resolved in
// pg_proc when the tool first runs (see the package documentation).
func CheckQuery(driver, query string) error {
	_, err := check(driver, query)
	return err
}

var forbiddenWords = map[string]bool{
	"INSERT": true, "UPDATE": true, "DELETE": true, "MERGE": true, "UPSERT": true,
	"INTO": true, "CREATE": true, "DROP": true, "ALTER": true, "TRUNCATE": true, "COPY": true,
	"GRANT": true, "REVOKE": true, "COMMENT": true, "LOCK": true, "VACUUM": true, "REINDEX": true,
	"CLUSTER": true, "REFRESH": true, "ATTACH": true, "DETACH": true, "PRAGMA": true, "CALL": true,
	"DO": true, "EXECUTE": true, "PREPARE": true, "DEALLOCATE": true, "LISTEN": true, "NOTIFY": true,
	"UNLISTEN": true, "SHARE": true, "NOWAIT": true, "BEGIN": true, "COMMIT": true, "ROLLBACK": true,
	"SAVEPOINT": true, "RELEASE": true, "RESET": true, "DISCARD": true, "LOAD": true, "SECURITY": true,
	"IMPORT": true, "CHECKPOINT": true,
}

// forbiddenFuncs are functions that write, reach outside the database or
// execute SQL text (which would escape this check).
var forbiddenFuncs = map[string]bool{
	"SET_CONFIG": true, "NEXTVAL": true, "SETVAL": true, "TXID_CURRENT": true, "PG_CURRENT_XACT_ID": true,
	"PG_NOTIFY": true, "PG_TERMINATE_BACKEND": true, "PG_CANCEL_BACKEND": true, "PG_RELOAD_CONF": true,
	"PG_ROTATE_LOGFILE": true, "PG_SWITCH_WAL": true, "PG_CREATE_RESTORE_POINT": true,
	"PG_READ_FILE": true, "PG_READ_BINARY_FILE": true, "PG_STAT_FILE": true, "PG_FILE_WRITE": true,
	"PG_FILE_UNLINK": true, "PG_FILE_RENAME": true, "PG_LOGDIR_LS": true, "PG_IMPORT_SYSTEM_COLLATIONS": true,
	"QUERY_TO_XML": true, "QUERY_TO_XMLSCHEMA": true, "QUERY_TO_XML_AND_XMLSCHEMA": true,
	"CURSOR_TO_XML": true, "CURSOR_TO_XMLSCHEMA": true, "PG_CREATE_LOGICAL_REPLICATION_SLOT": true,
	"PG_CREATE_PHYSICAL_REPLICATION_SLOT": true, "PG_DROP_REPLICATION_SLOT": true,
	"PG_LOGICAL_EMIT_MESSAGE": true, "PG_PROMOTE": true, "PG_LOG_BACKEND_MEMORY_CONTEXTS": true,
	"LOAD_EXTENSION": true, "READFILE": true, "WRITEFILE": true, "EDIT": true, "FTS3_TOKENIZER": true,
}

var forbiddenPrefixes = []string{"DBLINK", "LO_", "PG_ADVISORY", "PG_TRY_ADVISORY", "PG_LS_", "PG_READ_", "PG_FILE_", "PG_REPLICATION_"}

func check(driver, query string) (*scanned, error) {
	if driver != Postgres && driver != SQLite {
		return nil, fmt.Errorf("driver %q: want %q or %q", driver, Postgres, SQLite)
	}
	s, err := scan(driver, query)
	if err != nil {
		return nil, err
	}
	first := ""
	if len(s.words) > 0 {
		first = s.words[0]
	}
	if first != "SELECT" && first != "WITH" && first != "VALUES" {
		if first == "" {
			return nil, errors.New("the query is empty")
		}
		return nil, fmt.Errorf("the query starts with %s: only a read-only statement starting with SELECT, WITH or VALUES is allowed", first)
	}
	for i, w := range s.words {
		if forbiddenWords[w] {
			if w == "SHARE" && (i == 0 || (s.words[i-1] != "FOR" && s.words[i-1] != "KEY")) {
				continue // only FOR [KEY] SHARE locks
			}
			return nil, fmt.Errorf("the query contains %s: only a single read-only statement is allowed (quote a column of that name)", w)
		}
		if forbiddenFuncs[w] {
			return nil, fmt.Errorf("the query calls %s, which may write or leave the database", strings.ToLower(w))
		}
		for _, p := range forbiddenPrefixes {
			if strings.HasPrefix(w, p) {
				return nil, fmt.Errorf("the query calls %s, which may write or leave the database", strings.ToLower(w))
			}
		}
	}
	return s, nil
}

// scan removes comments, literals and quoted identifiers, following each
// dialect's lexical rules (PostgreSQL: nested block comments, E” escape
// strings, dollar quoting; SQLite: [ident] and `ident`). It is written by
// hand because no Go library parses both dialects' lexical structure; the
// grammar beyond tokens is left to the database.
func scan(driver, q string) (*scanned, error) {
	pg := driver == Postgres
	s := &scanned{}
	questions := 0
	ended := false // a ';' was seen: only comments and spaces may follow
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == 0:
			return nil, errors.New("the query contains a NUL byte")
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
			continue
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			j := strings.IndexByte(q[i:], '\n')
			if j < 0 {
				i = len(q)
			} else {
				i += j + 1
			}
			continue
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			end, err := blockComment(q, i, pg)
			if err != nil {
				return nil, err
			}
			i = end
			continue
		}
		if ended {
			return nil, errors.New("the query holds more than one statement: remove everything after the ';'")
		}
		switch {
		case c == ';':
			ended = true
			i++
		case c == '\'':
			end, err := quoted(q, i, '\'', false)
			if err != nil {
				return nil, err
			}
			s.toks = append(s.toks, token{'o', "'"})
			if pg && strings.IndexByte(q[i:end], '\\') >= 0 {
				// Whether '\' escapes depends on the server's
				// standard_conforming_strings: refuse the ambiguity.
				return nil, errors.New("a backslash in a '…' string is ambiguous on PostgreSQL: write E'…' for escapes")
			}
			i = end
		case c == '"':
			end, err := quoted(q, i, '"', false)
			if err != nil {
				return nil, err
			}
			s.toks = append(s.toks, token{'q', strings.ReplaceAll(q[i+1:end-1], `""`, `"`)})
			i = end
		case !pg && c == '`':
			end, err := quoted(q, i, '`', false)
			if err != nil {
				return nil, err
			}
			s.toks = append(s.toks, token{'q', q[i+1 : end-1]})
			i = end
		case !pg && c == '[':
			j := strings.IndexByte(q[i:], ']')
			if j < 0 {
				return nil, errors.New("unterminated [identifier]")
			}
			s.toks = append(s.toks, token{'q', q[i+1 : i+j]})
			i += j + 1
		case c == '(' || c == '.':
			s.toks = append(s.toks, token{'p', string(c)})
			i++
		case c == ':' && i+1 < len(q) && q[i+1] == ':':
			s.toks = append(s.toks, token{'p', "::"})
			i += 2
		case c == '$' && pg:
			// $1 is a parameter; $tag$ … $tag$ a dollar-quoted string.
			j := i + 1
			for j < len(q) && isDigit(q[j]) {
				j++
			}
			if j > i+1 {
				n, err := strconv.Atoi(q[i+1 : j])
				if err != nil || n > 65535 {
					return nil, fmt.Errorf("bad parameter %s", q[i:j])
				}
				s.params = max(s.params, n)
				s.toks = append(s.toks, token{'o', "$"})
				i = j
				continue
			}
			j = i + 1
			for j < len(q) && (isIdentStart(q[j]) || isDigit(q[j])) {
				j++
			}
			if j >= len(q) || q[j] != '$' {
				return nil, errors.New("stray '$': use $1, $2, … for parameters")
			}
			tag := q[i : j+1]
			k := strings.Index(q[j+1:], tag)
			if k < 0 {
				return nil, fmt.Errorf("unterminated dollar-quoted string %s", tag)
			}
			s.toks = append(s.toks, token{'o', "$"})
			i = j + 1 + k + len(tag)
		case c == '?':
			if pg {
				// PostgreSQL's ? is an operator (jsonb); parameters are $n.
				i++
				continue
			}
			j := i + 1
			for j < len(q) && isDigit(q[j]) {
				j++
			}
			if j > i+1 {
				n, err := strconv.Atoi(q[i+1 : j])
				if err != nil || n > 32766 {
					return nil, fmt.Errorf("bad parameter %s", q[i:j])
				}
				s.params = max(s.params, n)
			} else {
				questions++
			}
			i = j
		case !pg && (c == ':' || c == '@' || c == '$') && i+1 < len(q) && isIdent(q[i+1]):
			s.named = true
			i++
		case isIdentStart(c):
			j := i + 1
			for j < len(q) && isIdent(q[j]) {
				j++
			}
			word := strings.ToUpper(q[i:j])
			// E'…' (PostgreSQL) takes backslash escapes; B'', X'', N'',
			// U&'' are ordinary quoting.
			if j < len(q) && q[j] == '\'' && len(word) == 1 {
				end, err := quoted(q, j, '\'', pg && word == "E")
				if err != nil {
					return nil, err
				}
				i = end
				continue
			}
			if pg && word == "U" && j+1 < len(q) && q[j] == '&' && q[j+1] == '"' {
				// A Unicode-escaped identifier could spell any function's
				// name; nobody needs one in a tool's query.
				return nil, errors.New(`unicode-escaped identifiers (U&"…") are not supported: write the name plainly`)
			}
			if pg && word == "U" && j+1 < len(q) && q[j] == '&' && q[j+1] == '\'' {
				end, err := quoted(q, j+1, q[j+1], false)
				if err != nil {
					return nil, err
				}
				i = end
				continue
			}
			s.words = append(s.words, word)
			s.toks = append(s.toks, token{'w', foldIdent(q[i:j])})
			i = j
		default:
			s.toks = append(s.toks, token{'o', string(c)})
			i++
		}
	}
	if questions > 0 {
		if s.params > 0 {
			return nil, errors.New("mixing ? and ?NNN parameters is not supported")
		}
		s.params = questions
	}
	if s.named {
		return nil, errors.New("named parameters (:name, @name, $name) are not supported: use ? and list the arguments in bind")
	}
	return s, nil
}

// quoted returns the index after the literal that starts at q[i] == quote.
// A doubled quote stands for itself; backslash escapes when asked.
func quoted(q string, i int, quote byte, backslash bool) (int, error) {
	for j := i + 1; j < len(q); j++ {
		switch q[j] {
		case '\\':
			if backslash {
				j++
			}
		case quote:
			if j+1 < len(q) && q[j+1] == quote {
				j++
				continue
			}
			return j + 1, nil
		}
	}
	return 0, fmt.Errorf("unterminated %c-quoted text", quote)
}

// blockComment returns the index after the comment starting at q[i:]; in
// PostgreSQL they nest.
func blockComment(q string, i int, nest bool) (int, error) {
	depth := 0
	for j := i; j+1 < len(q); {
		switch {
		case q[j] == '/' && q[j+1] == '*':
			if depth == 0 || nest {
				depth++
			}
			j += 2
		case q[j] == '*' && q[j+1] == '/':
			depth--
			j += 2
			if depth == 0 {
				return j, nil
			}
		default:
			j++
		}
	}
	return 0, errors.New("unterminated /* comment")
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isIdentStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}
func isIdent(c byte) bool { return isIdentStart(c) || isDigit(c) || c == '$' }

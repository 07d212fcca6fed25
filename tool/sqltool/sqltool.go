// Package sqltool turns one read-only SQL query into a [tool.Tool]: the
// model's arguments are bound to the query's placeholders and the rows come
// back as JSON.
//
// # Safety
//
// A SQL tool runs a statement written by a user of the platform with
// values chosen by a model, so:
//
//   - the statement is checked when the tool is made ([CheckQuery]): one
//     statement, starting with SELECT, WITH or VALUES, with no word that
//     writes or locks and no function known to write or leave the database;
//   - side effects are default-denied on PostgreSQL: before the first run,
//     every function the statement calls — each identifier before '(',
//     quoted or not, schema-qualified or not — is resolved in pg_proc
//     through the search path, and only immutable or stable functions run
//     (plus the volatile ones an operator lists in [Config.AllowFunctions]);
//     a name that resolves to nothing is refused too. Finding calls by
//     tokens is written by hand because the one real parser of
//     PostgreSQL's grammar for Go (pg_query_go) needs cgo; the scan errs
//     towards seeing calls where there are none, which are then refused;
//   - on SQLite every connection carries an authorizer (modernc.org/sqlite's
//     RegisterAuthorizer) that allows reading, SELECT and functions other
//     than load_extension and kin, and denies writes, schema changes,
//     PRAGMA, ATTACH and transactions as each statement compiles;
//   - arguments are always bound as parameters ($1, $2, … on PostgreSQL;
//     ? on SQLite), never spliced into the text;
//   - as a further line of defence the statement runs in a read-only
//     transaction (PostgreSQL: BEGIN … READ ONLY, with SET LOCAL
//     statement_timeout and lock_timeout) or on connections opened
//     read-only (SQLite: mode=ro and PRAGMA query_only, on a connection
//     pool owned by the tool), so that a write hidden in a function still
//     fails;
//   - every call has a timeout ([Config.Timeout], default 10 s; SQLite is
//     interrupted when it passes) and returns at most [Config.MaxRows] rows
//     (default 100).
//
// What no check sees: a view or a function's body that calls a volatile
// function (the read-only transaction still stops its writes).
//
// # Results
//
// A call returns {"rows":[{column: value, …}, …],"truncated":false}, the
// columns in the query's order (a repeated column name gets a "_2" suffix).
// Bytes are base64 strings, times RFC 3339 strings, numerics and UUIDs
// their text; truncated is true when more rows than MaxRows existed.
package sqltool

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"modernc.org/sqlite"

	"github.com/weftlabs/weft/llm"
	"github.com/weftlabs/weft/tool"
	"github.com/weftlabs/weft/tool/internal/toolargs"
)

// Defaults of a Config's zero fields.
const (
	DefaultMaxRows = 100
	DefaultTimeout = 10 * time.Second
)

// Config describes a SQL tool.
type Config struct {
	// Name is the tool's name (^[a-zA-Z0-9_-]{1,64}$).
	Name string
	// Description tells the model what the query answers.
	Description string
	// Driver is Postgres or SQLite.
	Driver string
	// DSN is the connection string (PostgreSQL) or database file path or
	// file: URI (SQLite). When empty, it is read from the environment
	// variable DSNEnv.
	DSN string
	// DSNEnv names the environment variable holding the DSN.
	DSNEnv string
	// Query is the read-only statement.
	Query string
	// Bind lists the arguments bound to the placeholders, in order: the
	// first to $1 (or the first ?), and so on.
	Bind []string
	// Parameters is the JSON Schema object of the arguments; empty means
	// one untyped property per Bind entry, all required.
	Parameters json.RawMessage
	// MaxRows caps the rows returned; zero means DefaultMaxRows.
	MaxRows int
	// Timeout bounds one call; zero means DefaultTimeout.
	Timeout time.Duration
	// AllowFunctions lists volatile PostgreSQL functions the operator
	// allows the query to call, such as random or pg_sleep, each as the
	// query writes the call (folded as PostgreSQL folds names): "random"
	// allows random() through the search path but not s.random();
	// "s.random" allows s.random(). Immutable and stable functions need no
	// listing.
	AllowFunctions []string
}

// Option configures New.
type Option func(*options)

type options struct {
	getenv func(string) (string, bool)
}

// WithGetenv sets how Config.DSNEnv is read; the default is os.LookupEnv.
func WithGetenv(lookup func(name string) (string, bool)) Option {
	return func(o *options) { o.getenv = lookup }
}

// Tool is a SQL tool. It is safe for concurrent use; Close releases its
// connections.
type Tool struct {
	cfg   Config
	calls []call // the functions the query calls, resolved on PostgreSQL before the first run
	spec  llm.ToolSpec
	types map[string]string // Bind name → JSON Schema type ("" if none)
	pool  *pgxpool.Pool
	db    *sql.DB
	once  sync.Once

	mu       sync.Mutex
	verified bool  // the calls resolved to immutable, stable or allowed functions
	refused  error // or did not: the reason, for every call
}

var _ tool.Tool = (*Tool)(nil)

// New checks cfg — the name, the statement (see [CheckQuery]), the number
// of placeholders against Bind, the parameter schema — and returns the
// tool. PostgreSQL connections are opened on the first call.
func New(cfg Config, opts ...Option) (*Tool, error) {
	o := options{getenv: os.LookupEnv}
	for _, opt := range opts {
		opt(&o)
	}
	if !tool.ValidName(cfg.Name) {
		return nil, fmt.Errorf("sqltool: tool name %q must match ^[a-zA-Z0-9_-]{1,64}$", cfg.Name)
	}
	fail := func(format string, a ...any) error {
		return fmt.Errorf("sqltool: tool %s: "+format, append([]any{cfg.Name}, a...)...)
	}
	s, err := check(cfg.Driver, cfg.Query)
	if err != nil {
		return nil, fail("%w", err)
	}
	if s.params != len(cfg.Bind) {
		return nil, fail("the query has %d parameters but bind lists %d arguments", s.params, len(cfg.Bind))
	}
	seen := map[string]bool{}
	for _, b := range cfg.Bind {
		if b == "" || seen[b] {
			return nil, fail("bind: names must be non-empty and distinct, got %q", cfg.Bind)
		}
		seen[b] = true
	}
	params, types, err := parameters(cfg)
	if err != nil {
		return nil, fail("%w", err)
	}
	if cfg.MaxRows <= 0 {
		cfg.MaxRows = DefaultMaxRows
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	t := &Tool{
		cfg:   cfg,
		calls: s.calls(),
		spec:  llm.ToolSpec{Name: cfg.Name, Description: cfg.Description, Parameters: params},
		types: types,
	}
	dsn := cfg.DSN
	if dsn == "" && cfg.DSNEnv != "" {
		v, ok := o.getenv(cfg.DSNEnv)
		if !ok || v == "" {
			return nil, fail("environment variable %s (the DSN) is not set", cfg.DSNEnv)
		}
		dsn = v
	}
	t.cfg.DSN = "" // the DSN may hold a password: keep it only in the pool
	switch cfg.Driver {
	case Postgres:
		if dsn == "" {
			return nil, fail("no DSN: set DSN or DSNEnv")
		}
		pc, err := pgxpool.ParseConfig(dsn)
		if err != nil {
			return nil, fail("DSN: %w", err)
		}
		pc.MaxConns = 4
		pc.MaxConnIdleTime = time.Minute
		if t.pool, err = pgxpool.NewWithConfig(context.Background(), pc); err != nil {
			return nil, fail("%w", err)
		}
	case SQLite:
		if dsn == "" {
			return nil, fail("no database file: set DSN or DSNEnv")
		}
		if t.db, err = openSQLite(dsn); err != nil {
			return nil, fail("%w", err)
		}
	}
	return t, nil
}

// openSQLite opens a pool whose every connection is read-only and carries
// an authorizer that lets a statement read and call functions, nothing else.
func openSQLite(dsn string) (*sql.DB, error) {
	path, query, _ := strings.Cut(strings.TrimPrefix(dsn, "file:"), "?")
	v, err := url.ParseQuery(query)
	if err != nil {
		return nil, fmt.Errorf("DSN: %w", err)
	}
	// mode=ro opens the file read-only, which a PRAGMA cannot undo;
	// query_only refuses writes to temporary and attached databases too.
	v.Set("mode", "ro")
	v.Add("_pragma", "query_only(1)")
	v.Add("_pragma", "busy_timeout(5000)")
	drv := &sqlite.Driver{}
	drv.RegisterConnectionHook(func(c sqlite.ExecQuerierContext, _ string) error {
		r, ok := c.(sqlite.AuthorizerRegisterer)
		if !ok {
			return errors.New("the SQLite driver offers no authorizer")
		}
		return r.RegisterAuthorizer(authorize)
	})
	db := sql.OpenDB(connector{drv: drv, dsn: "file:" + path + "?" + v.Encode()})
	db.SetMaxOpenConns(4)
	db.SetConnMaxIdleTime(time.Minute)
	return db, nil
}

// connector opens connections of one DSN on a driver of the tool's own, so
// that its connection hook (the authorizer) touches no other SQLite pool
// of the process.
type connector struct {
	drv *sqlite.Driver
	dsn string
}

func (c connector) Connect(context.Context) (driver.Conn, error) { return c.drv.Open(c.dsn) }
func (c connector) Driver() driver.Driver                        { return c.drv }

// authorize is the SQLite authorizer of a tool's connections, consulted as
// each statement compiles: reading, SELECT, recursive WITH and functions
// other than the dangerous ones pass; writes, schema changes, PRAGMA,
// ATTACH and transactions are denied, whatever the statement check missed.
func authorize(action sqlite.AuthorizerActionCode, arg1, arg2, _, _ string) sqlite.AuthorizerReturnCode {
	switch action {
	case sqlite.AuthSelect, sqlite.AuthRead, sqlite.AuthRecursive:
		return sqlite.AuthorizerOK
	case sqlite.AuthFunction:
		name := strings.ToUpper(arg2)
		if forbiddenFuncs[name] {
			return sqlite.AuthorizerDeny
		}
		return sqlite.AuthorizerOK
	}
	return sqlite.AuthorizerDeny
}

// parameters returns the tool's schema and the declared type of each bound
// argument.
func parameters(cfg Config) (json.RawMessage, map[string]string, error) {
	types := make(map[string]string, len(cfg.Bind))
	if len(bytes.TrimSpace(cfg.Parameters)) == 0 {
		props := make(map[string]any, len(cfg.Bind))
		for i, b := range cfg.Bind {
			props[b] = map[string]any{"description": "bound to parameter " + strconv.Itoa(i+1) + " of the query"}
			types[b] = ""
		}
		req := cfg.Bind
		if req == nil {
			req = []string{}
		}
		p, err := json.Marshal(map[string]any{"type": "object", "properties": props, "required": req, "additionalProperties": false})
		return p, types, err
	}
	if _, err := toolargs.ParseSchema(cfg.Parameters); err != nil {
		return nil, nil, err
	}
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(cfg.Parameters, &s); err != nil {
		return nil, nil, fmt.Errorf("parameters: %w", err)
	}
	for _, b := range cfg.Bind {
		p, ok := s.Properties[b]
		if !ok && s.Properties != nil {
			return nil, nil, fmt.Errorf("bind names %q, which parameters does not declare", b)
		}
		if typ, ok := p.Type.(string); ok {
			types[b] = typ
		} else {
			types[b] = ""
		}
	}
	return cfg.Parameters, types, nil
}

// Spec describes the tool.
func (t *Tool) Spec() llm.ToolSpec { return t.spec }

// Config returns the tool's configuration, without the DSN.
func (t *Tool) Config() Config { return t.cfg }

// Close releases the tool's connections.
func (t *Tool) Close() error {
	var err error
	t.once.Do(func() {
		if t.pool != nil {
			t.pool.Close()
		}
		if t.db != nil {
			err = t.db.Close()
		}
	})
	return err
}

// Call binds the arguments and runs the query.
func (t *Tool) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	vals, err := t.bind(args)
	if err != nil {
		return tool.Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, t.cfg.Timeout)
	defer cancel()
	var out []byte
	if t.pool != nil {
		out, err = t.queryPostgres(ctx, vals)
	} else {
		out, err = t.querySQLite(ctx, vals)
	}
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return tool.Result{}, fmt.Errorf("tool %s: the query did not finish within %v: %w", t.cfg.Name, t.cfg.Timeout, context.DeadlineExceeded)
		}
		if ctx.Err() != nil {
			return tool.Result{}, ctx.Err()
		}
		return tool.Result{}, fmt.Errorf("tool %s: %w", t.cfg.Name, err)
	}
	return tool.Result{Content: string(out)}, nil
}

// bind turns the arguments into the query's parameter values, in Bind
// order.
func (t *Tool) bind(args json.RawMessage) ([]any, error) {
	obj, err := toolargs.Object(t.cfg.Name, toolargs.Schema{}, args)
	if err != nil {
		return nil, err
	}
	argErr := func(field, format string, a ...any) error {
		return &tool.ArgumentError{Tool: t.cfg.Name, Field: field, Err: fmt.Errorf(format, a...)}
	}
	for k := range obj {
		if _, ok := t.types[k]; !ok {
			return nil, argErr(k, "unexpected argument: the query takes %s", strings.Join(t.cfg.Bind, ", "))
		}
	}
	vals := make([]any, len(t.cfg.Bind))
	for i, name := range t.cfg.Bind {
		raw, ok := obj[name]
		if !ok {
			return nil, argErr(name, "required but missing")
		}
		v, err := decodeValue(raw, t.types[name], t.pool != nil)
		if err != nil {
			return nil, argErr(name, "%v", err)
		}
		vals[i] = v
	}
	return vals, nil
}

// decodeValue converts one JSON argument to a parameter value, checking the
// schema's type when there is one.
func decodeValue(raw json.RawMessage, typ string, pg bool) (any, error) {
	raw = bytes.TrimSpace(raw)
	kind := toolargs.Kind(raw)
	mismatch := func() error { return fmt.Errorf("expected %s, got %s", article(typ), kind) }
	if string(raw) == "null" {
		if typ != "" && typ != "null" {
			return nil, mismatch()
		}
		return nil, nil
	}
	switch raw[0] {
	case '"':
		if typ != "" && typ != "string" {
			return nil, mismatch()
		}
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	case 't', 'f':
		if typ != "" && typ != "boolean" {
			return nil, mismatch()
		}
		return raw[0] == 't', nil
	case '{':
		if typ != "" && typ != "object" {
			return nil, mismatch()
		}
		return string(raw), nil // JSON text, for json/jsonb columns or SQLite's JSON functions
	case '[':
		if typ != "" && typ != "array" {
			return nil, mismatch()
		}
		if !pg {
			return string(raw), nil // JSON text, for json_each
		}
		var items []any
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if err := d.Decode(&items); err != nil {
			return nil, err
		}
		return pgArray(items)
	default:
		if typ != "" && typ != "number" && typ != "integer" {
			return nil, mismatch()
		}
		n := json.Number(raw)
		if i, err := n.Int64(); err == nil {
			return i, nil
		}
		if typ == "integer" {
			return nil, fmt.Errorf("expected an integer, got %s", raw)
		}
		f, err := n.Float64()
		if err != nil {
			return nil, fmt.Errorf("number %s: %w", raw, err)
		}
		return f, nil
	}
}

// pgArray converts a JSON array of scalars of one kind to a typed slice.
func pgArray(items []any) (any, error) {
	var (
		strs  []string
		ints  []int64
		flts  []float64
		bools []bool
	)
	for _, it := range items {
		switch v := it.(type) {
		case string:
			strs = append(strs, v)
		case bool:
			bools = append(bools, v)
		case json.Number:
			if i, err := v.Int64(); err == nil {
				ints = append(ints, i)
			}
			f, err := v.Float64()
			if err != nil {
				return nil, err
			}
			flts = append(flts, f)
		default:
			return nil, errors.New("array items must be strings, numbers or booleans")
		}
	}
	switch n := len(items); {
	case n == 0:
		return []string{}, nil
	case len(strs) == n:
		return strs, nil
	case len(bools) == n:
		return bools, nil
	case len(ints) == n:
		return ints, nil
	case len(flts) == n:
		return flts, nil
	}
	return nil, errors.New("array items must all be of one kind")
}

func article(typ string) string {
	switch typ {
	case "integer", "object", "array":
		return "an " + typ
	}
	return "a " + typ
}

func (t *Tool) queryPostgres(ctx context.Context, vals []any) ([]byte, error) {
	tx, err := t.pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, err
	}
	defer func() {
		// The transaction only read: end it even when ctx is done.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		tx.Rollback(rctx)
	}()
	ms := strconv.FormatInt(max(t.cfg.Timeout.Milliseconds(), 1), 10)
	if _, err := tx.Exec(ctx, "SET LOCAL statement_timeout = "+ms+"; SET LOCAL lock_timeout = "+ms); err != nil {
		return nil, err
	}
	if err := t.verify(ctx, tx); err != nil {
		return nil, err
	}
	rows, err := tx.Query(ctx, t.cfg.Query, vals...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	fds := rows.FieldDescriptions()
	cols := make([]string, len(fds))
	for i, fd := range fds {
		cols[i] = fd.Name
	}
	w := newWriter(cols)
	for rows.Next() {
		if w.n == t.cfg.MaxRows {
			w.truncated = true
			break
		}
		v, err := rows.Values()
		if err != nil {
			return nil, err
		}
		if err := w.row(v); err != nil {
			return nil, err
		}
	}
	if !w.truncated {
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return w.finish(), nil
}

// volatilityQuery resolves a function name as PostgreSQL would see it:
// in the named schema, else in the schemas of the search path (pg_catalog
// included). It reports how many functions of that name exist and whether
// all of them are immutable or stable (any overload could be the one called).
const volatilityQuery = `SELECT count(*), coalesce(bool_and(p.provolatile IN ('i', 's')), false)
FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
WHERE p.proname = $1 AND CASE WHEN $2 = '' THEN n.nspname = ANY (pg_catalog.current_schemas(true)) ELSE n.nspname = $2 END`

// verify resolves, once, every function the query calls in pg_proc: only
// immutable and stable functions (which cannot change anything) and those
// in Config.AllowFunctions may run; a name that resolves to nothing is
// refused too, since the scan may have misread it. Side effects are
// default-denied: nothing depends on knowing the dangerous functions.
func (t *Tool) verify(ctx context.Context, tx pgx.Tx) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.verified || t.refused != nil {
		return t.refused
	}
	allowed := map[string]bool{}
	for _, f := range t.cfg.AllowFunctions {
		allowed[f] = true
	}
	for _, c := range t.calls {
		// An entry matches the call as written: "random" allows random()
		// through the search path, not evil.random(); "s.f" allows s.f().
		if allowed[c.String()] {
			continue
		}
		var n int
		var safe bool
		if err := tx.QueryRow(ctx, volatilityQuery, c.name, c.schema).Scan(&n, &safe); err != nil {
			return fmt.Errorf("resolving function %s: %w", c, err)
		}
		switch {
		case n == 0:
			t.refused = fmt.Errorf("the query calls %s, which does not resolve to a function in the search path: refused (check the name; quoted names are case-sensitive)", c)
		case !safe:
			t.refused = fmt.Errorf("the query calls %s, a volatile function that may have side effects: refused (an operator may allow it in AllowFunctions)", c)
		}
		if t.refused != nil {
			return t.refused
		}
	}
	t.verified = true
	return nil
}

func (t *Tool) querySQLite(ctx context.Context, vals []any) ([]byte, error) {
	rows, err := t.db.QueryContext(ctx, t.cfg.Query, vals...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	w := newWriter(cols)
	v := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range v {
		ptrs[i] = &v[i]
	}
	for rows.Next() {
		if w.n == t.cfg.MaxRows {
			w.truncated = true
			break
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		if err := w.row(v); err != nil {
			return nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return w.finish(), nil
}

// writer renders rows as JSON objects with the columns in query order
// (which a map would lose).
type writer struct {
	keys      [][]byte // encoded column names
	buf       bytes.Buffer
	n         int
	truncated bool
}

func newWriter(cols []string) *writer {
	w := &writer{keys: make([][]byte, len(cols))}
	seen := map[string]bool{}
	for i, c := range cols {
		name := c
		for k := 2; seen[name]; k++ {
			name = c + "_" + strconv.Itoa(k)
		}
		seen[name] = true
		w.keys[i], _ = json.Marshal(name)
	}
	w.buf.WriteString(`{"rows":[`)
	return w
}

func (w *writer) row(vals []any) error {
	if w.n > 0 {
		w.buf.WriteByte(',')
	}
	w.n++
	w.buf.WriteByte('{')
	for i, v := range vals {
		if i > 0 {
			w.buf.WriteByte(',')
		}
		w.buf.Write(w.keys[i])
		w.buf.WriteByte(':')
		b, err := json.Marshal(jsonValue(v))
		if err != nil {
			return fmt.Errorf("column %s: %w", w.keys[i], err)
		}
		w.buf.Write(b)
	}
	w.buf.WriteByte('}')
	return nil
}

func (w *writer) finish() []byte {
	fmt.Fprintf(&w.buf, `],"truncated":%t}`, w.truncated)
	return w.buf.Bytes()
}

// jsonValue maps a driver value to what its JSON should be.
func jsonValue(v any) any {
	switch v := v.(type) {
	case nil, bool, string, int64, int32, int16, int8, int, uint32, uint64:
		return v
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return strconv.FormatFloat(v, 'g', -1, 64)
		}
		return v
	case float32:
		return jsonValue(float64(v))
	case []byte:
		return v // base64 by encoding/json
	case time.Time:
		return v.Format(time.RFC3339Nano)
	case [16]byte: // uuid
		return fmt.Sprintf("%x-%x-%x-%x-%x", v[0:4], v[4:6], v[6:8], v[8:10], v[10:16])
	case netip.Prefix:
		return v.String()
	case netip.Addr:
		return v.String()
	case time.Duration:
		return v.String()
	case json.Marshaler:
		return v
	case fmt.Stringer:
		return v.String()
	case map[string]any, []any:
		return v // json/jsonb, arrays
	}
	if _, err := json.Marshal(v); err == nil {
		return v
	}
	return fmt.Sprint(v)
}

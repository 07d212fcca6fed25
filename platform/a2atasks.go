package platform

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/weftlabs/weft/platform/a2a"
	"github.com/weftlabs/weft/platform/meta"
)

// A2A ListTasks: the stored tasks of the agent at whose endpoint the
// request came (an agent's tasks are visible to every key of its tenant,
// as GetTask shows them), most recently changed first. A page ends with a
// cursor, the last task's time of change and id, that the next request
// sends back as its pageToken. The order and statusTimestampAfter use the
// task's last stored change, which is its status' time (a lost task
// reads as failed at its stale time but is ordered by its last write).
// A task this replica runs is shown live, with the answer so far.

// list answers ListTasks.
func (ts *a2aTaskStore) list(ctx context.Context, tenant, agentID string, p *a2a.ListParams) (*a2a.TaskList, *a2a.Error) {
	if ts.db == nil {
		return nil, a2a.Errorf(a2a.CodeUnsupportedOperation, "tasks cannot be listed: the metadata store keeps none")
	}
	q := meta.A2ATaskQuery{TenantID: tenant, AgentID: agentID, ContextID: p.ContextID, State: string(p.State), Lost: string(a2a.StateFailed),
		Now: time.Now(), UpdatedSince: p.StatusAfter, Limit: p.PageSize + 1}
	if p.PageToken != "" {
		var ok bool
		if q.AfterUpdated, q.AfterID, ok = parseTaskCursor(p.PageToken); !ok {
			return nil, a2a.Errorf(a2a.CodeInvalidParams, "field \"pageToken\" is not a token this server gave")
		}
	}
	rows, total, err := ts.db.ListA2ATasks(ctx, q)
	if err != nil {
		return nil, a2a.Errorf(a2a.CodeInternalError, "tasks: the store failed: %v", err)
	}
	out := &a2a.TaskList{Tasks: make([]*a2a.Task, 0, min(len(rows), p.PageSize)), PageSize: p.PageSize, TotalSize: total}
	if len(rows) > p.PageSize {
		rows = rows[:p.PageSize]
		last := rows[len(rows)-1]
		out.NextPageToken = taskCursor(last.UpdatedAt, last.ID)
	}
	for _, row := range rows {
		t, e := storedTask(row)
		if e != nil {
			return nil, e
		}
		if live := ts.liveTask(tenant, agentID, row.ID); live != nil {
			ts.mu.Lock()
			t = live.snapshot(nil)
			ts.mu.Unlock()
		}
		cutHistory(t, p.HistoryLength)
		if !p.IncludeArtifacts {
			t.Artifacts = nil
		}
		out.Tasks = append(out.Tasks, t)
	}
	return out, nil
}

// taskCursor is the page token after the task changed at updated with id.
func taskCursor(updated time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(updated.UnixMicro(), 10) + "." + id))
}

// parseTaskCursor reads a page token of taskCursor.
func parseTaskCursor(token string) (time.Time, string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return time.Time{}, "", false
	}
	us, id, ok := strings.Cut(string(b), ".")
	n, err := strconv.ParseInt(us, 10, 64)
	if !ok || err != nil || id == "" {
		return time.Time{}, "", false
	}
	return time.UnixMicro(n).UTC(), id, true
}

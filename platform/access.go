package platform

import (
	"net/http"

	"github.com/weftlabs/weft/platform/meta"
)

// access is what a route asks of its caller: the least role (see
// meta.Role), and whether the route is a use of the platform (a turn, a
// search) rather than a change to it, which the audit log does not record.
// Every authenticated route declares one where it is registered (s.handle):
// that registration is the one table of who may call what, and the
// middleware (requireAuth) enforces it before the handler runs.
type access struct {
	role meta.Role
	use  bool
}

// need is the access of a route that changes or reads the tenant's
// objects: the least role.
func need(role meta.Role) access { return access{role: role} }

// use is the access of a route that uses the platform without changing
// its objects (a chat turn, a search): not recorded in the audit log.
func use(role meta.Role) access { return access{role: role, use: true} }

// The roles, as the route table names them.
const (
	owner   = meta.RoleOwner
	admin   = meta.RoleAdmin
	builder = meta.RoleBuilder
	viewer  = meta.RoleViewer
	endUser = meta.RoleEndUser
)

// allows answers nil when p may call a route that needs a, else the 403.
func (a access) allows(p principal) *apiError {
	if p.Key.Role.AtLeast(a.role) {
		return nil
	}
	return errorf(http.StatusForbidden, CodeForbidden, "this route needs the %s role or higher; the key %q has the role %s", a.role, p.Key.Name, roleName(p.Key.Role))
}

func roleName(r meta.Role) string {
	if r == "" {
		return "(none)"
	}
	return string(r)
}

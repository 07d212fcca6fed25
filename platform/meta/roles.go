package meta

import "fmt"

// Role is what a key (or a signed-in member) may do in its tenant. Roles
// are ordered: each may do what the roles below it may.
//
//   - owner: everything in the tenant, keys and their roles included.
//   - admin: everything but keys: secrets, budgets' reads, sessions, and
//     all a builder does.
//   - builder: creates and edits agents, tools, knowledge bases and
//     workflows, and runs them.
//   - viewer: reads everything but secrets' names and keys: agents,
//     sessions, traces, usage, runs.
//   - end_user: chats with the agents it is given (GET /v1/models, chat,
//     the OpenAI, A2A and MCP endpoints).
//
// Keys stored before roles existed keep what they could do: an admin key
// is an owner, any other key an admin.
type Role string

// The roles, highest first.
const (
	RoleOwner   Role = "owner"
	RoleAdmin   Role = "admin"
	RoleBuilder Role = "builder"
	RoleViewer  Role = "viewer"
	RoleEndUser Role = "end_user"
)

// Roles lists the roles, highest first.
var Roles = []Role{RoleOwner, RoleAdmin, RoleBuilder, RoleViewer, RoleEndUser}

// rank orders the roles; an unknown role ranks below every known one.
func (r Role) rank() int {
	switch r {
	case RoleOwner:
		return 5
	case RoleAdmin:
		return 4
	case RoleBuilder:
		return 3
	case RoleViewer:
		return 2
	case RoleEndUser:
		return 1
	}
	return 0
}

// AtLeast reports whether r may do what need may. An unknown role may
// nothing, and nothing is enough for an unknown need (fail closed).
func (r Role) AtLeast(need Role) bool {
	return r.rank() > 0 && need.rank() > 0 && r.rank() >= need.rank()
}

// ParseRole returns the role named s, or an error naming the roles.
func ParseRole(s string) (Role, error) {
	if r := Role(s); r.rank() > 0 {
		return r, nil
	}
	return "", fmt.Errorf("role %q is not one of owner, admin, builder, viewer, end_user", s)
}

// legacyRole is the role of a key stored before roles: an admin key is an
// owner, any other key an admin (it could do everything but manage keys).
func legacyRole(admin bool) Role {
	if admin {
		return RoleOwner
	}
	return RoleAdmin
}

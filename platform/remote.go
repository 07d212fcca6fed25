package platform

import (
	"context"
	"fmt"
	"time"

	"github.com/weftlabs/weft/platform/client"
	"github.com/weftlabs/weft/platform/meta"
)

// remoteTurn delegates to an agent on another Weft server: it calls that
// server's chat API with the API key read from the environment variable the
// agent record names (the key itself is never stored).
func (s *Server) remoteTurn(ctx context.Context, target meta.Agent, query string) (string, error) {
	r := target.Remote
	key := ""
	if r.APIKeyEnv != "" {
		key = s.cfg.Getenv(r.APIKeyEnv)
		if key == "" {
			return "", fmt.Errorf("remote agent %q: environment variable %s is not set on this server", target.Name, r.APIKeyEnv)
		}
	}
	// The URL is a tenant's: it goes through the outbound guard like every
	// request the server makes on a user's behalf.
	hc := s.guard.Client()
	hc.Timeout = 5 * time.Minute
	c := client.New(r.URL, key, client.WithHTTPClient(hc))
	ans, err := c.Chat(ctx, r.AgentID, client.ChatRequest{Query: query})
	if err != nil {
		return "", fmt.Errorf("remote agent %q at %s: %w", target.Name, r.URL, err)
	}
	return ans.Answer, nil
}

package a2a

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Skill is something an agent can do, as its card lists it.
type Skill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
}

// Card describes an A2A agent: who it is, where its JSON-RPC endpoint is,
// what it can do, and how to authenticate. [Card.Encode] writes it in
// either version's form.
type Card struct {
	Name        string
	Description string
	Version     string
	// URL is the JSON-RPC endpoint; empty for a card that lists agents
	// without being one (Weft's tenant card).
	URL       string
	Streaming bool
	// Bearer, when set, declares HTTP bearer authentication with this
	// description.
	Bearer      string
	InputModes  []string
	OutputModes []string
	Skills      []Skill
	// Dialect is the version the card's endpoint is spoken in (set by
	// [ParseCard]).
	Dialect Dialect
}

type cardInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	ProtocolVersion string `json:"protocolVersion"`
}

type cardCaps struct {
	Streaming         bool `json:"streaming"`
	PushNotifications bool `json:"pushNotifications"`
}

// Encode returns the card in dialect d. A 1.0 card lists the endpoint
// twice, for 1.0 and 0.3 (the endpoint serves both); a 0.3 card names it
// in url.
func (c Card) Encode(d Dialect) any {
	skills := c.Skills
	if skills == nil {
		skills = []Skill{}
	}
	card := map[string]any{
		"name":               c.Name,
		"description":        c.Description,
		"version":            c.Version,
		"capabilities":       cardCaps{Streaming: c.Streaming},
		"defaultInputModes":  c.InputModes,
		"defaultOutputModes": c.OutputModes,
		"skills":             skills,
	}
	if d == V03 {
		card["protocolVersion"] = "0.3.0"
		card["preferredTransport"] = "JSONRPC"
		card["url"] = c.URL
		if c.Bearer != "" {
			card["securitySchemes"] = map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer", "description": c.Bearer}}
			card["security"] = []map[string][]string{{"bearer": {}}}
		}
		return card
	}
	ifaces := []cardInterface{}
	if c.URL != "" {
		ifaces = append(ifaces, cardInterface{URL: c.URL, ProtocolBinding: "JSONRPC", ProtocolVersion: Version},
			cardInterface{URL: c.URL, ProtocolBinding: "JSONRPC", ProtocolVersion: LegacyVersion})
	}
	card["supportedInterfaces"] = ifaces
	if c.Bearer != "" {
		card["securitySchemes"] = map[string]any{"bearer": map[string]any{"httpAuthSecurityScheme": map[string]any{"scheme": "Bearer", "description": c.Bearer}}}
		card["securityRequirements"] = []map[string]any{{"schemes": map[string]any{"bearer": map[string]any{"list": []string{}}}}}
	}
	return card
}

// ParseCard reads an agent card of either version and picks the endpoint
// to talk to: a JSON-RPC interface of version 1.0 if the card lists one,
// else of version 0.3.
func ParseCard(data []byte) (Card, error) {
	var raw struct {
		Name                string          `json:"name"`
		Description         string          `json:"description"`
		Version             string          `json:"version"`
		URL                 string          `json:"url"`
		ProtocolVersion     string          `json:"protocolVersion"`
		PreferredTransport  string          `json:"preferredTransport"`
		SupportedInterfaces []cardInterface `json:"supportedInterfaces"`
		AdditionalIfaces    []struct {
			URL       string `json:"url"`
			Transport string `json:"transport"`
		} `json:"additionalInterfaces"`
		Capabilities struct {
			Streaming bool `json:"streaming"`
		} `json:"capabilities"`
		Skills []Skill `json:"skills"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return Card{}, fmt.Errorf("a2a: agent card: %w", err)
	}
	c := Card{Name: raw.Name, Description: raw.Description, Version: raw.Version, Streaming: raw.Capabilities.Streaming, Skills: raw.Skills}
	if len(raw.SupportedInterfaces) > 0 {
		var legacy string
		for _, i := range raw.SupportedInterfaces {
			if !strings.EqualFold(i.ProtocolBinding, "JSONRPC") || i.URL == "" {
				continue
			}
			if strings.HasPrefix(i.ProtocolVersion, "1.") && c.URL == "" {
				c.URL = i.URL
			}
			if (i.ProtocolVersion == "" || strings.HasPrefix(i.ProtocolVersion, "0.")) && legacy == "" {
				legacy = i.URL
			}
		}
		if c.URL == "" && legacy != "" {
			c.URL, c.Dialect = legacy, V03
		}
	} else if raw.URL != "" {
		c.Dialect = V03
		if raw.PreferredTransport == "" || strings.EqualFold(raw.PreferredTransport, "JSONRPC") {
			c.URL = raw.URL
		}
		for _, i := range raw.AdditionalIfaces {
			if c.URL == "" && strings.EqualFold(i.Transport, "JSONRPC") {
				c.URL = i.URL
			}
		}
	}
	if c.URL == "" {
		return c, fmt.Errorf("a2a: agent card %q lists no JSON-RPC endpoint", raw.Name)
	}
	return c, nil
}

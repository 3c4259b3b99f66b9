package mcpclient

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentc/agentc/runtime"
	"github.com/agentc/agentc/runtime/artifact"
)

// ArtifactRef is how a tool result references a content the server
// returned that is not text: saved as an artifact of the session (Name,
// Revision), or not (Error says why), or a link the server gave (URI).
type ArtifactRef struct {
	Name     string `json:"name,omitempty"`
	Revision int    `json:"revision,omitempty"`
	MimeType string `json:"mime_type,omitempty"`
	Size     int    `json:"size"`
	URI      string `json:"uri,omitempty"`
	Error    string `json:"error,omitempty"`
}

// line is the reference as a line of the result's text.
func (r ArtifactRef) line() string {
	switch {
	case r.Name != "" && r.Error == "":
		return fmt.Sprintf("[artifact %s revision %d: %s, %d bytes]", r.Name, r.Revision, r.MimeType, r.Size)
	case r.Name == "" && r.Error == "":
		return fmt.Sprintf("[resource %s: %s]", r.URI, r.MimeType)
	}
	return fmt.Sprintf("[%s, %d bytes, not saved: %s]", r.MimeType, r.Size, r.Error)
}

// maxSavedContents bounds the contents of one result saved as artifacts;
// the others are referenced as not saved.
const maxSavedContents = 16

// extensions are the file extensions of artifact names by MIME type (a
// fixed table: the system's MIME database differs between machines).
var extensions = map[string]string{
	"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp", "image/svg+xml": ".svg",
	"audio/wav": ".wav", "audio/x-wav": ".wav", "audio/mpeg": ".mp3", "audio/ogg": ".ogg",
	"application/pdf": ".pdf", "application/json": ".json", "text/plain": ".txt", "text/markdown": ".md",
	"text/html": ".html", "text/csv": ".csv",
}

// safeName keeps letters, digits, '.', '-' and '_' of s (others '_').
func safeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	out := strings.Trim(string(b), ".")
	if out == "" {
		out = "_"
	}
	if len(out) > 64 {
		out = out[:64]
	}
	return out
}

// saveContents saves the image, audio and embedded-resource contents of a
// result as artifacts of the call's session, named
// mcp/<tool>/<call>-<n><ext> (the same names on a retry, which add
// revisions), and returns their references in content order. Resource
// links are referenced, not fetched. Without an artifact service or a
// session (a direct call) nothing is saved and each reference says so.
func (t *tool) saveContents(ctx context.Context, req runtime.ToolRequest, contents []mcp.Content) []ArtifactRef {
	var refs []ArtifactRef
	n := 0
	for _, c := range contents {
		var data []byte
		var mime, uri string
		switch c := c.(type) {
		case *mcp.ImageContent:
			data, mime = c.Data, c.MIMEType
		case *mcp.AudioContent:
			data, mime = c.Data, c.MIMEType
		case *mcp.EmbeddedResource:
			if c.Resource == nil {
				continue
			}
			mime, uri = c.Resource.MIMEType, c.Resource.URI
			data = c.Resource.Blob
			if data == nil {
				data = []byte(c.Resource.Text)
				if mime == "" {
					mime = "text/plain"
				}
			}
		case *mcp.ResourceLink:
			refs = append(refs, ArtifactRef{URI: c.URI, MimeType: c.MIMEType})
			continue
		default:
			continue
		}
		if mime == "" {
			mime = "application/octet-stream"
		}
		n++
		if n > maxSavedContents {
			refs = append(refs, ArtifactRef{MimeType: mime, Size: len(data), URI: uri, Error: fmt.Sprintf("more than %d contents in one result", maxSavedContents)})
			continue
		}
		ext := extensions[mime]
		if ext == "" && uri != "" {
			ext = safeName(path.Ext(uri))
			if ext == "_" || len(ext) > 8 {
				ext = ""
			}
		}
		if ext == "" {
			ext = ".bin"
		}
		ref := ArtifactRef{MimeType: mime, Size: len(data), URI: uri}
		svc := t.pool.artifacts.Load()
		key := artifact.Key{App: req.Session.App, User: req.Session.User, Session: req.Session.Session,
			Name: "mcp/" + safeName(t.t.Name) + "/" + safeName(req.CallID) + "-" + strconv.Itoa(n) + ext}
		switch {
		case svc == nil:
			ref.Error = "no artifact store"
		case key.App == "" || key.User == "" || key.Session == "":
			ref.Error = "no session"
		default:
			m, err := svc.Save(ctx, key, data, mime, req.Run)
			if err != nil {
				ref.Error = err.Error()
				break
			}
			ref.Name, ref.Revision = m.Name, m.Revision
		}
		refs = append(refs, ref)
	}
	return refs
}

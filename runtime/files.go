package runtime

// Input files (spec/runner.md, "Input files"): the files and images a
// request carries (an A2A file part, an AG-UI binary part, an OpenAI
// image_url part) are stored as artifacts of the session (runtime/artifact,
// "input/<name>", saved by the run) when the invocation is admitted, and the
// input event records them (files). Images — by their bytes or by a URL the
// server does not fetch — go to the llm calls of the invocation whose model
// declares image_input = true, after the text of their prompt.

import (
	"context"
	"fmt"
	"mime"
	"path"
	"strconv"
	"strings"

	"github.com/agentc/agentc/runtime/artifact"
	"github.com/agentc/agentc/runtime/store"
)

// InputFile is a file a request carries: its bytes, or a URL reference.
type InputFile struct {
	Name      string // the client's file name ("": none)
	MediaType string // e.g. "image/png"; "" unknown
	Data      []byte // nil for a URL reference
	URL       string // an http(s) reference (not fetched by the server)
}

// FileRef is an input file as the input event records it: the artifact it
// was stored as (its name and revision), or its URL.
type FileRef struct {
	Artifact  string `json:"artifact,omitempty"`
	Revision  int    `json:"revision,omitempty"`
	MediaType string `json:"media_type,omitempty"`
	Size      int    `json:"size,omitempty"`
	URL       string `json:"url,omitempty"`
}

// ContentPart is one part of a multi-part message (Message.Parts): text,
// or an image by its bytes or URL.
type ContentPart struct {
	Type      string `json:"type"` // "text" or "image"
	Text      string `json:"text,omitempty"`
	MediaType string `json:"media_type,omitempty"`
	Data      []byte `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

// MaxInputFiles is how many files one invocation may carry.
const MaxInputFiles = 16

// InputArtifacts is the folder of the artifacts input files are saved as:
// what a run was given, not what it made (an A2A task's artifacts leave
// them out).
const InputArtifacts = "input/"

// storeFiles saves the invocation's files with bytes as artifacts of the
// session, each under "input/<name>", and returns their references. A file
// the artifact service refuses (too large, a bad name) refuses the
// invocation.
func (r *Runner) storeFiles(ctx context.Context, key store.SessionKey, run string, files []InputFile) ([]FileRef, error) {
	if len(files) == 0 {
		return nil, nil
	}
	if len(files) > MaxInputFiles {
		return nil, fmt.Errorf("%w: %d files, at most %d", ErrInvalidInvocation, len(files), MaxInputFiles)
	}
	svc := artifact.New(r.st, r.clock.Now)
	refs := make([]FileRef, len(files))
	for i, f := range files {
		if f.Data == nil {
			if !strings.HasPrefix(f.URL, "https://") && !strings.HasPrefix(f.URL, "http://") {
				return nil, fmt.Errorf("%w: file %d has neither bytes nor an http(s) URL", ErrInvalidInvocation, i)
			}
			refs[i] = FileRef{URL: f.URL, MediaType: f.MediaType}
			continue
		}
		name := InputArtifacts + fileName(f, i)
		m, err := svc.Save(ctx, artifact.Key{App: key.App, User: key.User, Session: key.Session, Name: name}, f.Data, f.MediaType, run)
		if err != nil {
			return nil, fmt.Errorf("%w: file %d: %v", ErrInvalidInvocation, i, err)
		}
		refs[i] = FileRef{Artifact: name, Revision: m.Revision, MediaType: f.MediaType, Size: len(f.Data)}
	}
	return refs, nil
}

// fileName is the artifact name of file i: the client's base name when it
// is plain (letters, digits, '.', '-', '_'), else "file-<i>" with the
// media type's extension.
func fileName(f InputFile, i int) string {
	base := path.Base(strings.ReplaceAll(f.Name, "\\", "/"))
	ok := base != "" && base != "." && base != ".." && len(base) <= 100 && base[0] != '.'
	for j := 0; ok && j < len(base); j++ {
		c := base[j]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_'
	}
	if ok && artifact.CheckName(base) == nil {
		return base
	}
	name := "file-" + strconv.Itoa(i+1)
	if exts, _ := mime.ExtensionsByType(f.MediaType); len(exts) > 0 {
		name += exts[0]
	}
	return name
}

// images are the invocation's image files as content parts.
func (a *activeRun) images() []ContentPart {
	var out []ContentPart
	for _, f := range a.files {
		if strings.HasPrefix(f.MediaType, "image/") || f.Data == nil && f.MediaType == "" {
			out = append(out, ContentPart{Type: "image", MediaType: f.MediaType, Data: f.Data, URL: f.URL})
		}
	}
	return out
}

// withImages returns the prompt message of agent ag's call with the
// invocation's images after its text, when the agent's model takes images.
func (a *activeRun) withImages(ag *agentInfo, m Message) Message {
	if !ag.imageInput {
		return m
	}
	imgs := a.images()
	if len(imgs) == 0 {
		return m
	}
	m.Parts = append([]ContentPart{{Type: "text", Text: m.Content}}, imgs...)
	return m
}

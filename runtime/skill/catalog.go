package skill

import (
	"encoding/hex"
	"path/filepath"
	"regexp"

	"github.com/agentc/agentc/compiler/bytecode"
	"github.com/agentc/agentc/compiler/skillmd"
	"github.com/agentc/agentc/compiler/types"
	"github.com/agentc/agentc/runtime/store"
)

// Grant is one skill granted to an agent.
type Grant struct {
	Decl        string // the declaration's name: what the model passes as `skill`
	Dir         string // absolute folder
	Exec        bool   // skill_run allowed
	Description string // the declaration's description override ("" = SKILL.md's)
}

// Evolved says where an agent's evolution policy publishes skills, which
// the agent may load (read grant).
type Evolved struct {
	Dir   string // the policy's publish folder, absolute
	Scope string // none, app or user
}

// Catalog is what every llm agent may load and run, by agent name.
type Catalog struct {
	Grants  map[string][]Grant
	Evolved map[string]Evolved
}

// CatalogFromProgram reads the agents' skill grants and evolution policies
// of p; paths in p are relative to root (the project root).
func CatalogFromProgram(p *bytecode.Program, root string) *Catalog {
	c := &Catalog{Grants: map[string][]Grant{}, Evolved: map[string]Evolved{}}
	for i := range p.Agents {
		ag := &p.Agents[i]
		for _, g := range ag.Skills {
			if int(g.Skill) >= len(p.Skills) {
				continue
			}
			sk := &p.Skills[g.Skill]
			c.Grants[ag.Name] = append(c.Grants[ag.Name], Grant{
				Decl: sk.Name, Dir: filepath.Join(root, filepath.FromSlash(sk.Path)), Exec: g.Grant == bytecode.GrantExec,
				Description: ConstAttr(p, sk.Attrs, "description").Str(),
			})
		}
		for _, pi := range ag.Policies {
			if int(pi) >= len(p.Policies) || p.Policies[pi].Kind != bytecode.PolicyEvolution {
				continue
			}
			pol := &p.Policies[pi]
			ev := Evolved{Dir: filepath.Join(root, "skills", "evolved"), Scope: "none"}
			if v, _ := p.ConstAttr(pol.Attrs, "publish"); v.Kind() == types.ValString && v.Str() != "" {
				ev.Dir = filepath.Join(root, filepath.FromSlash(v.Str()))
			}
			if v, _ := p.ConstAttr(pol.Attrs, "scope"); v.Kind() == types.ValString && v.Str() != "" {
				ev.Scope = v.Str()
			}
			c.Evolved[ag.Name] = ev
		}
	}
	return c
}

// ConstAttr returns the constant value of attribute name, or the zero Value
// (bytecode.Program.ConstAttr).
func ConstAttr(p *bytecode.Program, attrs []bytecode.Attr, name string) types.Value {
	v, _ := p.ConstAttr(attrs, name)
	return v
}

var safeSegRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$`)

// segment makes an app or user id a safe folder name: as is when it is
// plain, else "x-" and its hex encoding.
func segment(s string) string {
	if safeSegRE.MatchString(s) {
		return s
	}
	return "x-" + hex.EncodeToString([]byte(s))
}

// PublishDir is the folder that holds the skills an evolution policy
// publishes for a session's scope: base for scope none, base/APP for app,
// base/APP/USER for user.
func PublishDir(base, scope string, key store.SessionKey) string {
	switch scope {
	case "app":
		return filepath.Join(base, segment(key.App))
	case "user":
		return filepath.Join(base, segment(key.App), segment(key.User))
	}
	return base
}

// NameOK reports whether name is a valid skill (and folder) name.
func NameOK(name string) bool { return skillmd.NameRE.MatchString(name) }

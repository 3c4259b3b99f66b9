package assemble

// Selecting a store (spec/storage.md): the store target of a command and the
// project settings file it may come from.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"gopkg.in/yaml.v3"

	"github.com/agentc/agentc/runtime/store/dial"
)

// projectYAML is what agentc reads from agentc.yaml at the project root:
// the store target, the retention: section and the serve: section.
type projectYAML struct {
	Store     string        `yaml:"store"`
	Retention yamlRetention `yaml:"retention"`
	yamlServe `yaml:",inline"`
}

// readProjectYAML reads root/agentc.yaml; a missing file is no settings.
func readProjectYAML(root string) (projectYAML, error) {
	var y projectYAML
	b, err := os.ReadFile(filepath.Join(root, "agentc.yaml"))
	if errors.Is(err, fs.ErrNotExist) {
		return y, nil
	}
	if err != nil {
		return y, fmt.Errorf("agentc.yaml: %w", err)
	}
	if err := yaml.Unmarshal(b, &y); err != nil {
		return y, fmt.Errorf("agentc.yaml: %w", err)
	}
	return y, nil
}

// ResolveStore is a command's store target: flag when set, else
// AGENTC_STORE (env; nil: os.LookupEnv), else store: of root/agentc.yaml,
// else the data directory data (Pebble). A target naming a backend this
// build does not know is the user's error.
func ResolveStore(flag string, set bool, data, root string, env func(string) (string, bool)) (string, error) {
	y, err := readProjectYAML(root)
	if err != nil {
		return "", err
	}
	return pickStore(flag, set, y.Store, data, env)
}

func pickStore(flag string, set bool, yamlStore, data string, env func(string) (string, bool)) (string, error) {
	if env == nil {
		env = os.LookupEnv
	}
	target, from := data, "the data directory"
	if v, _ := env("AGENTC_STORE"); set {
		target, from = flag, "--store"
	} else if v != "" {
		target, from = v, "AGENTC_STORE"
	} else if yamlStore != "" {
		target, from = yamlStore, "store: in agentc.yaml"
	}
	if _, err := dial.Parse(target); err != nil {
		return "", fmt.Errorf("%s: %w", from, err)
	}
	return target, nil
}

package emulator

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/mediagen/mediagen-emulator/emulator/config"
	"github.com/mediagen/mediagen-emulator/emulator/internal/catalog"
	"github.com/mediagen/mediagen-emulator/emulator/internal/scenario"
	"github.com/mediagen/mediagen-emulator/emulator/internal/sim"
	"github.com/mediagen/mediagen-emulator/scenarios"
)

// DefaultScenario is the scenario served when none is chosen.
const DefaultScenario = config.DefaultScenario

// loadScenarios reads every embedded scenario, by name.
func loadScenarios() (map[string]*scenario.Scenario, error) {
	out := map[string]*scenario.Scenario{}
	entries, err := fs.ReadDir(scenarios.FS, ".")
	if err != nil {
		return nil, err
	}
	var problems catalog.Problems
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		data, err := fs.ReadFile(scenarios.FS, e.Name())
		if err != nil {
			return nil, err
		}
		sc, err := scenario.Parse("scenarios/"+e.Name(), data)
		if err != nil {
			var ps catalog.Problems
			if errors.As(err, &ps) {
				problems = append(problems, ps...)
				continue
			}
			return nil, err
		}
		sc.Name = strings.TrimSuffix(e.Name(), ".yaml")
		out[sc.Name] = sc
	}
	if len(problems) > 0 {
		return nil, problems
	}
	return out, nil
}

// resolveScenario finds a scenario by embedded name, or reads it from a path (anything with a
// slash or a .yaml/.yml ending).
func resolveScenario(known map[string]*scenario.Scenario, nameOrPath string) (*scenario.Scenario, error) {
	if sc, ok := known[nameOrPath]; ok {
		return sc, nil
	}
	if !strings.ContainsAny(nameOrPath, `/\`) && !strings.HasSuffix(nameOrPath, ".yaml") && !strings.HasSuffix(nameOrPath, ".yml") {
		return nil, fmt.Errorf("no scenario %q (embedded: %s; or give a path to a YAML file)", nameOrPath, strings.Join(sim.ScenarioNames(known), ", "))
	}
	data, err := os.ReadFile(nameOrPath)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: no such file", nameOrPath)
		}
		return nil, fmt.Errorf("%s: %w", nameOrPath, errors.Unwrap(err))
	}
	return scenario.Parse(nameOrPath, data)
}

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/wats-network/wats/api"
	"github.com/wats-network/wats/dashboard"
	"github.com/wats-network/wats/repo"
)

// exportedNames returns the names of the samples of a Prometheus text
// exposition (a histogram's _bucket, _sum and _count each).
func exportedNames(text string) map[string]bool {
	names := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	return names
}

// grafanaQueries returns the metric names each panel of
// docs/grafana/wats.json queries, by panel title.
func grafanaQueries(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "grafana", "wats.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("wats.json: %v", err)
	}
	name := regexp.MustCompile(`\bwats_[a-z0-9_]+`)
	queries := map[string][]string{}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			queries[p.Title] = append(queries[p.Title], name.FindAllString(tg.Expr, -1)...)
		}
	}
	return queries
}

// TestGrafanaQueriesAreExported: every metric docs/grafana/wats.json
// queries, and every one the web dashboard's history records, is served
// at /metrics by a daemon of the default profile that has just started,
// before it counted anything: a panel says 0, not "No data", for a node
// that has banned no one yet.
func TestGrafanaQueriesAreExported(t *testing.T) {
	bin, tmp, env := e2eSetup(t)
	dir := filepath.Join(tmp, "node")
	initDefault(t, env, bin, dir)
	startBinDaemon(t, env, bin, dir)
	text, err := api.NewClient(filepath.Join(dir, repo.SocketFile)).Metrics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	exported := exportedNames(text)
	queried := 0
	for title, names := range grafanaQueries(t) {
		for _, n := range names {
			queried++
			if !exported[n] {
				t.Errorf("Grafana's panel %q queries %s, which a daemon just started does not serve at /metrics", title, n)
			}
		}
	}
	if queried < 20 {
		t.Errorf("the Grafana dashboard queries %d metrics; want the node's main ones", queried)
	}
	for _, r := range dashboard.Recorded {
		if !exported[r.Name] {
			t.Errorf("the web dashboard records %s, which a daemon just started does not serve at /metrics", r.Name)
		}
	}
}

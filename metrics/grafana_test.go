package metrics

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
)

var metricName = regexp.MustCompile(`\bwats_[a-z0-9_]+`)

// declaredMetrics returns the metric names the node's code declares: the
// "wats_…" string literals of the repo's Go files, tests apart.
func declaredMetrics(t *testing.T) map[string]bool {
	t.Helper()
	lit := regexp.MustCompile(`"(wats_[a-z0-9_]+)"`)
	names := map[string]bool{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range lit.FindAllStringSubmatch(string(b), -1) {
			names[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestGrafanaDashboard: docs/grafana/wats.json is a dashboard whose every
// query names metrics the node has (a histogram's _bucket, _sum and _count
// series included), whose panels have ids of their own and fit the
// 24-column grid.
func TestGrafanaDashboard(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "grafana", "wats.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title  string `json:"title"`
		Panels []struct {
			ID      int    `json:"id"`
			Type    string `json:"type"`
			Title   string `json:"title"`
			GridPos struct {
				W int `json:"w"`
				X int `json:"x"`
			} `json:"gridPos"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d, json.RejectUnknownMembers(false)); err != nil {
		t.Fatalf("wats.json: %v", err)
	}
	declared := declaredMetrics(t)
	if !declared["wats_peers"] || !declared["wats_requests_refused_total"] {
		t.Fatalf("the scan of the code found %d metrics, not wats_peers or wats_requests_refused_total", len(declared))
	}
	ids := map[int]bool{}
	queried := 0
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel %q: id %d used twice", p.Title, p.ID)
		}
		ids[p.ID] = true
		if p.GridPos.X < 0 || p.GridPos.W < 1 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: x %d, width %d: past the 24 columns", p.Title, p.GridPos.X, p.GridPos.W)
		}
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			for _, name := range metricName.FindAllString(tg.Expr, -1) {
				queried++
				base := name
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if b, ok := strings.CutSuffix(name, suffix); ok && declared[b] {
						base = b
					}
				}
				if !declared[base] {
					t.Errorf("panel %q queries %s, which the node does not have", p.Title, name)
				}
			}
		}
	}
	if queried < 20 {
		t.Errorf("the dashboard queries %d metrics; want the node's main ones", queried)
	}
}

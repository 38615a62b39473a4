package convert

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestEveryRowHasConformance fails for a row of the registry whose package
// has no test that calls formatstest.Conformance (or ConformanceOpen) with
// it: the contract of readers and writers is checked for every dialect.
func TestEveryRowHasConformance(t *testing.T) {
	fset := token.NewFileSet()
	reg, err := parser.ParseFile(fset, "registry.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	imports := map[string]string{} // package name → directory
	const module = "github.com/agentconv/agentconv/"
	for _, im := range reg.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		if !strings.HasPrefix(p, module) {
			continue
		}
		name := p[strings.LastIndex(p, "/")+1:]
		if im.Name != nil {
			name = im.Name.Name
		}
		imports[name] = filepath.Join("..", filepath.FromSlash(strings.TrimPrefix(p, module)))
	}
	var rows []*ast.SelectorExpr
	ast.Inspect(reg, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || vs.Names[0].Name != "Dialects" || len(vs.Values) != 1 {
			return true
		}
		for _, el := range vs.Values[0].(*ast.CompositeLit).Elts {
			sel, ok := el.(*ast.SelectorExpr)
			if !ok {
				t.Errorf("registry.go: a row that is not package.Name: %T", el)
				continue
			}
			rows = append(rows, sel)
		}
		return false
	})
	if len(rows) != len(Dialects) {
		t.Fatalf("registry.go: %d rows read of the %d in Dialects", len(rows), len(Dialects))
	}
	checked := map[string]map[string]bool{} // directory → the rows its tests check
	for i, row := range rows {
		pkg := row.X.(*ast.Ident).Name
		dir, ok := imports[pkg]
		if !ok {
			t.Errorf("registry.go: row %s.%s: package %s is not imported from the module", pkg, row.Sel.Name, pkg)
			continue
		}
		if checked[dir] == nil {
			checked[dir] = conformanceCalls(t, dir, pkg)
		}
		if !checked[dir][row.Sel.Name] {
			t.Errorf("the row %s.%s (%s) has no conformance test: add to a test of %s\n\tformatstest.Conformance(t, %s.%s, \"<dir>/<fixture>\", ...)\n"+
				"with its fixtures under the repository's testdata/<dir>/, where the goldens (go test ./convert -run TestGolden -update writes them) and the detection matrix take them too",
				pkg, row.Sel.Name, Dialects[i].Name, dir, pkg, row.Sel.Name)
		}
	}
}

// conformanceCalls lists the rows (package-level names) that the tests in
// dir pass to formatstest.Conformance or ConformanceOpen, as name in the
// package's own tests or pkg.name in its external ones.
func conformanceCalls(t *testing.T, dir, pkg string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	out := map[string]bool{}
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) < 2 {
				return true
			}
			fn, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || (fn.Sel.Name != "Conformance" && fn.Sel.Name != "ConformanceOpen") {
				return true
			}
			if x, ok := fn.X.(*ast.Ident); !ok || x.Name != "formatstest" {
				return true
			}
			switch a := call.Args[1].(type) {
			case *ast.Ident:
				out[a.Name] = true
			case *ast.SelectorExpr:
				if x, ok := a.X.(*ast.Ident); ok && x.Name == pkg {
					out[a.Sel.Name] = true
				}
			}
			return true
		})
	}
	return out
}

package convert

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentconv/agentconv/formats"
)

const module = "github.com/agentconv/agentconv"

// writerPackage is the import path of the package of a dialect's writer.
func writerPackage(d formats.Dialect) string {
	name := runtime.FuncForPC(reflect.ValueOf(d.NewWriter).Pointer()).Name()
	slash := strings.LastIndex(name, "/")
	dot := strings.Index(name[slash+1:], ".")
	return name[:slash+1+dot]
}

// quirkRefs parses the Go files (tests left out) of the package in dir,
// and returns the quirks it declares, by identifier, and the places where
// it uses a quirk other than to declare it: the identifier, local or
// formats.X, by position.
func quirkRefs(t *testing.T, dir string) (decl map[string]string, uses map[string]string) {
	t.Helper()
	fset := token.NewFileSet()
	names, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	decl, uses = map[string]string{}, map[string]string{}
	for _, f := range files {
		declared := map[*ast.Ident]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			for i, v := range vs.Values {
				call, ok := v.(*ast.CallExpr)
				if !ok || len(call.Args) != 1 {
					continue
				}
				if fn := exprString(call.Fun); fn != "formats.NewQuirk" && fn != "NewQuirk" {
					continue
				}
				lit, ok := call.Args[0].(*ast.BasicLit)
				if !ok {
					t.Errorf("%s: a quirk's phrase is not a literal", fset.Position(call.Pos()))
					continue
				}
				phrase, _ := strconv.Unquote(lit.Value)
				decl[vs.Names[i].Name] = phrase
				declared[vs.Names[i]] = true
			}
			return true
		})
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.SelectorExpr:
				if id, ok := x.X.(*ast.Ident); ok && id.Name == "formats" {
					uses[fset.Position(x.Pos()).String()] = "formats." + x.Sel.Name
				}
				return false
			case *ast.Ident:
				if !declared[x] {
					uses[fset.Position(x.Pos()).String()] = x.Name
				}
			}
			return true
		})
	}
	return decl, uses
}

func exprString(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return exprString(x.X) + "." + x.Sel.Name
	}
	return ""
}

// TestPackagesReportTheirRowsQuirks: a dialect package uses (reports, or
// passes to a helper that reports) only the quirks that the rows of its
// writers declare, at every place in its code, whether a fixture reaches
// it or not; and every quirk is declared with a literal phrase.
func TestPackagesReportTheirRowsQuirks(t *testing.T) {
	t.Parallel()
	declared := map[string]formats.Quirk{} // by package path + "." + identifier
	shared, _ := quirkRefs(t, filepath.Join("..", "formats"))
	for id, phrase := range shared {
		q, ok := formats.QuirkNamed(phrase)
		if !ok {
			t.Fatalf("formats.%s: %q is not a declared quirk", id, phrase)
		}
		declared["formats."+id] = q
	}
	rows := map[string][]formats.Quirk{}
	for _, d := range Writable() {
		pkg := writerPackage(d)
		rows[pkg] = append(rows[pkg], d.Quirks...)
	}
	dirs, _ := filepath.Glob(filepath.Join("..", "formats", "*"))
	dirs = append(dirs, filepath.Join("..", "otel"))
	checked := 0
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		rel, _ := filepath.Rel("..", dir)
		pkg := module + "/" + filepath.ToSlash(rel)
		decl, uses := quirkRefs(t, dir)
		local := map[string]formats.Quirk{}
		for id, phrase := range decl {
			q, ok := formats.QuirkNamed(phrase)
			if !ok {
				t.Fatalf("%s.%s: %q is not a declared quirk", pkg, id, phrase)
			}
			local[id] = q
		}
		for at, id := range uses {
			q, ok := local[id]
			if !ok {
				if q, ok = declared[id]; !ok {
					continue // not a quirk
				}
			}
			checked++
			if !slices.Contains(rows[pkg], q) {
				t.Errorf("%s: %s uses the quirk %q, which no row of its writers declares", at, pkg, q)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no quirk used in any package")
	}
}

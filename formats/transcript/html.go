package transcript

import (
	_ "embed"
	"html/template"
	"io"
)

// htmlPage renders one self-contained page: inline CSS, no script, no
// request for anything (its Content-Security-Policy allows none), a
// viewport for phones, the system's dark mode. html/template escapes all
// that comes from the input.
type htmlPage struct{}

//go:embed page.tmpl
var pageTmpl string

//go:embed page.css
var pageCSS string

var pageT = template.Must(template.New("page").Funcs(template.FuncMap{
	"long":      long,
	"lines":     lines,
	"capital":   capital,
	"errorWord": errorWord,
	"css":       func() template.CSS { return template.CSS(pageCSS) },
	"blockOf":   func(what, text string) block { return block{what, text} },
	"outputWord": func(preview bool) string {
		if preview {
			return "output (a preview of a longer one)"
		}
		return "output"
	},
}).Parse(pageTmpl))

func (htmlPage) ext() string { return ".html" }

func (htmlPage) begin(w io.Writer, title string) error {
	return pageT.ExecuteTemplate(w, "begin", title)
}

func (htmlPage) end(w io.Writer) error { return pageT.ExecuteTemplate(w, "end", nil) }

func (htmlPage) run(w io.Writer, d *runDoc) error { return pageT.ExecuteTemplate(w, "run", d) }

func (htmlPage) index(w io.Writer, pages []*pageEntry) error {
	if err := pageT.ExecuteTemplate(w, "begin", "Transcripts"); err != nil {
		return err
	}
	if err := pageT.ExecuteTemplate(w, "index", pages); err != nil {
		return err
	}
	return pageT.ExecuteTemplate(w, "end", nil)
}

// block is a call's arguments or output, as the template shows it.
type block struct{ What, Text string }

// Command floor is the benchmark's floor: it reads NDJSON files and only
// checks each line with goccy's json.Valid, which is the least any
// conversion of them has to do (a file named *.json is checked whole, as
// one value). It prints the lines it read and how many were not valid
// JSON. A directory given stands for its *.jsonl and *.json files, at any
// depth. Given many files, it checks them on every core it may use (one
// goroutine a core, a file at a time), as a listing of them does.
//
//	go build -o floor ./testdata/bench/floor && floor FILE|DIR...
package main

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/goccy/go-json"
)

func main() {
	names := make(chan string)
	var mu sync.Mutex
	lines, bad := 0, 0
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range names {
				l, b := check(name)
				mu.Lock()
				lines, bad = lines+l, bad+b
				mu.Unlock()
			}
		}()
	}
	for _, arg := range os.Args[1:] {
		err := filepath.WalkDir(arg, func(name string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return err
			case name == arg && !d.IsDir():
				names <- name
			case d.Type().IsRegular() && (strings.HasSuffix(name, ".jsonl") || strings.HasSuffix(name, ".json")):
				names <- name
			}
			return nil
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "floor:", err)
			os.Exit(1)
		}
	}
	close(names)
	wg.Wait()
	fmt.Printf("%d lines, %d not valid JSON\n", lines, bad)
	if bad > 0 {
		os.Exit(1)
	}
}

// check counts the lines of file name and those that are not valid JSON.
func check(name string) (lines, bad int) {
	f, err := os.Open(name)
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
	defer f.Close()
	if strings.HasSuffix(name, ".json") {
		b, err := io.ReadAll(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "floor:", name+":", err)
			os.Exit(1)
		}
		if !json.Valid(b) {
			bad++
		}
		return 1, bad
	}
	br := bufio.NewReaderSize(f, 64<<10)
	var long []byte
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long[:0], line...)
			for err == bufio.ErrBufferFull {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(line) > 0 {
			lines++
			if !json.Valid(line) {
				bad++
			}
		}
		if err == io.EOF {
			return lines, bad
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "floor:", name+":", err)
			os.Exit(1)
		}
	}
}

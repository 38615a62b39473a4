// Command floor is the benchmark's floor: it reads NDJSON files and only
// checks each line with goccy's json.Valid, which is the least any
// conversion of them has to do. It prints the lines it read and how many
// were not valid JSON.
//
//	go build -o floor ./testdata/bench/floor && floor FILE...
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"

	"github.com/goccy/go-json"
)

func main() {
	lines, bad := 0, 0
	for _, name := range os.Args[1:] {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "floor:", err)
			os.Exit(1)
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
				break
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "floor:", name+":", err)
				os.Exit(1)
			}
		}
		f.Close()
	}
	fmt.Printf("%d lines, %d not valid JSON\n", lines, bad)
	if bad > 0 {
		os.Exit(1)
	}
}

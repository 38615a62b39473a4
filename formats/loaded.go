package formats

import "io"

// PopLoaded gives the next of what a reader that reads its whole input
// first (a session file read as a tree) has made: its errors first, then
// its events, then io.EOF.
func PopLoaded(queue *[]*Event, errs *[]error) (*Event, error) {
	if len(*errs) > 0 {
		err := (*errs)[0]
		*errs = (*errs)[1:]
		return nil, err
	}
	if len(*queue) == 0 {
		return nil, io.EOF
	}
	e := (*queue)[0]
	*queue = (*queue)[1:]
	return e, nil
}

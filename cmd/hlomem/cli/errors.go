package cli

import (
	"errors"
	"fmt"

	"github.com/hlomem/hlomem/hlo"
)

// moduleError names the module of file that err is about, unless err is an
// input error that carries its own position: that one is printed as it is,
// FILE:LINE:COL: message.
func moduleError(file string, m *hlo.Module, err error) error {
	if isInputError(err) {
		return err
	}
	return fmt.Errorf("%s: module %s: %w", file, m.Name, err)
}

// isInputError reports whether err carries a position in the input.
func isInputError(err error) bool {
	var list hlo.ErrorList
	var one *hlo.Error
	return errors.As(err, &list) || errors.As(err, &one)
}

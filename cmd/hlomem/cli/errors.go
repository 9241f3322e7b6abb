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
	var list hlo.ErrorList
	var one *hlo.Error
	if errors.As(err, &list) || errors.As(err, &one) {
		return err
	}
	return fmt.Errorf("%s: module %s: %w", file, m.Name, err)
}

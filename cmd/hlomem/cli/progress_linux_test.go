package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/hlomem/hlomem/hlo"
	"github.com/hlomem/hlomem/report"
)

// envRequirePTY, when set (CI sets it), makes a machine without
// pseudo-terminals fail the terminal tests instead of skipping them.
const envRequirePTY = "HLOMEM_REQUIRE_PTY"

// openPTY returns the two ends of a new pseudo-terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		if os.Getenv(envRequirePTY) != "" {
			t.Fatalf("no pseudo-terminal, and %s is set: %v", envRequirePTY, err)
		}
		t.Skipf("no pseudo-terminal: %v (CI sets %s, which makes this a failure)", err, envRequirePTY)
	}
	t.Cleanup(func() { m.Close() })
	require.NoError(t, unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	require.NoError(t, err)
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return m, s
}

// TestReportProgress: on a terminal, hlomem report shows its stages on
// stderr and clears the line at the end; on anything else (a file, a
// pipe, /dev/null), nothing.
func TestReportProgress(t *testing.T) {
	master, slave := openPTY(t)
	require.True(t, isTerminal(slave))
	var stdout bytes.Buffer
	code := Main([]string{"report", transformerHLO}, strings.NewReader(""), &stdout, slave)
	require.Equal(t, exitOK, code)
	slave.Close()
	var seen bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&seen, master); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		master.Close()
		<-done
	}
	require.Contains(t, seen.String(), "report 1/1 jit_train_step: plan")
	src, err := os.ReadFile(transformerHLO)
	require.NoError(t, err)
	m, err := hlo.ParseModule(transformerHLO, string(src))
	require.NoError(t, err)
	levers := len(report.WhatIfs(m))
	require.Contains(t, seen.String(), fmt.Sprintf("what if: %d of %d planned", levers, levers))
	require.True(t, strings.HasSuffix(seen.String(), "\r\x1b[K"), "the line is cleared at the end: %q", seen.String())

	for _, name := range []string{os.DevNull, t.TempDir() + "/stderr"} {
		f, err := os.Create(name)
		require.NoError(t, err)
		require.False(t, isTerminal(f), name)
		code := Main([]string{"report", "--what-if=false", transformerHLO}, strings.NewReader(""), io.Discard, f)
		require.Equal(t, exitOK, code)
		f.Close()
	}
	var errb bytes.Buffer
	require.Equal(t, exitOK, Main([]string{"report", transformerHLO}, strings.NewReader(""), io.Discard, &errb))
	require.Empty(t, errb.String(), "no progress on a pipe or buffer")
}

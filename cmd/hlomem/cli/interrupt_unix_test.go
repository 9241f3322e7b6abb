//go:build unix

package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// bigChain writes a scheduled module of n element-wise steps to dir: large
// enough that every stage of a command (reading, verifying, preparing,
// assigning, writing) takes a noticeable time.
func bigChain(t *testing.T, dir, name string, n int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("HloModule chain, is_scheduled=true\nENTRY e {\n  p = f32[256] parameter(0)\n  x0 = f32[256] negate(p)\n")
	for i := 1; i < n; i++ {
		if i%7 == 0 {
			fmt.Fprintf(&b, "  x%d = f32[256] add(x%d, p)\n", i, i-1)
		} else {
			fmt.Fprintf(&b, "  x%d = f32[256] negate(x%d)\n", i, i-1)
		}
	}
	fmt.Fprintf(&b, "  ROOT r = f32[256] negate(x%d)\n}\n", n-1)
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	return path
}

// interruptMain runs Main with args and sends sig to this process after
// delay, counted from the moment the command watches for interrupts; it
// returns the exit code, the outputs and how long Main took to return
// after the signal.
func interruptMain(t *testing.T, args []string, sig syscall.Signal, delay time.Duration) (int, string, string, time.Duration) {
	t.Helper()
	// A signal that arrives after Main has returned (the command was
	// quicker than the delay) must not end the test process: this
	// handler keeps the default action off meanwhile.
	guard := make(chan os.Signal, 4)
	signal.Notify(guard, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(guard)
	started := make(chan struct{})
	var once sync.Once
	commandStarted = func() { once.Do(func() { close(started) }) }
	defer func() { commandStarted = nil }()
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- Main(args, strings.NewReader(""), &stdout, &stderr) }()
	select {
	case <-started:
	case code := <-done:
		t.Fatalf("%v: ended (exit %d) before it watched for interrupts: %s", args, code, stderr.String())
	}
	select {
	case code := <-done:
		return code, stdout.String(), stderr.String(), 0
	case <-time.After(delay):
	}
	sent := time.Now()
	require.NoError(t, syscall.Kill(os.Getpid(), sig))
	select {
	case code := <-done:
		return code, stdout.String(), stderr.String(), time.Since(sent)
	case <-time.After(time.Minute):
		t.Fatalf("%v: still running a minute after the signal", args)
	}
	return 0, "", "", 0
}

// TestInterruptEveryCommand: an interrupt (SIGINT or SIGTERM) stops every
// command whatever stage it is in: exit 130, "interrupted; nothing
// written" on stderr, nothing on stdout, no output file written or
// replaced, no temporary file left. The signal comes at several moments
// of each command's work on a large module, so that reading, verifying,
// preparing, planning and writing are each interrupted in some run.
// (Not parallel: the signal goes to the whole test process.)
func TestInterruptEveryCommand(t *testing.T) {
	dir := t.TempDir()
	// Under -short (the fast tier) smaller modules: the signal still comes
	// at a quarter of each command's own time.
	big, little := 150_000, 40_000
	if testing.Short() {
		big, little = 40_000, 10_000
	}
	chain := bigChain(t, dir, "chain.hlo", big)
	// report plans a dozen alternatives: a smaller module takes as long.
	small := bigChain(t, dir, "small.hlo", little)
	csv := filepath.Join(dir, "problem.csv")
	var cb strings.Builder
	cb.WriteString("id,lower,upper,size\n")
	for i := 0; i < 15_000; i++ {
		fmt.Fprintf(&cb, "b%d,%d,%d,%d\n", i, i%5000, i%5000+1+(i*7919)%300, 64+(i*104729)%4096)
	}
	require.NoError(t, os.WriteFile(csv, []byte(cb.String()), 0o644))
	golden := filepath.Join(dir, "memory.peak")
	require.NoError(t, os.WriteFile(golden, []byte("kept\n"), 0o644))
	html := filepath.Join(dir, "out.html")
	svg := filepath.Join(dir, "out.svg")

	commands := [][]string{
		{"fmt", chain},
		{"liveness", "--format=json", chain},
		{"assign", chain},
		{"assign", "--format=json", chain},
		{"fuse", chain},
		{"run", "--verify", chain},
		{"run", "--inputs=random", chain},
		{"run", "--device=a100-40gb", chain},
		{"report", "--html=" + html, "--svg=" + svg, small},
		{"peak", "--golden=" + golden, "--update", chain},
		{"pack", "--budget=3s", csv},
	}
	for _, args := range commands {
		// The signal comes at the start, a quarter and three quarters of
		// the way through the command's own time (measured here), so that
		// early and late stages are interrupted on any machine.
		start := time.Now()
		code := Main(args, strings.NewReader(""), io.Discard, io.Discard)
		full := time.Since(start)
		require.Contains(t, []int{exitOK, exitInfeasible}, code, "%v: the uninterrupted run", args)
		require.NoError(t, os.WriteFile(golden, []byte("kept\n"), 0o644))
		os.Remove(html)
		os.Remove(svg)
		delays := []time.Duration{0, full / 4, full * 3 / 4}
		if testing.Short() {
			delays = delays[1:2]
		}
		for i, delay := range delays {
			sig := syscall.SIGINT
			if i%2 == 1 {
				sig = syscall.SIGTERM
			}
			name := fmt.Sprintf("%s/%v/%v of %v", strings.Join(args[:len(args)-1], " "), sig, delay.Round(time.Millisecond), full.Round(time.Millisecond))
			code, stdout, stderr, took := interruptMain(t, args, sig, delay)
			if code == exitOK {
				// Finished before the signal came: nothing to check; the
				// outputs it wrote go, for the next runs' checks.
				t.Logf("%s: finished before the signal", name)
				require.NoError(t, os.WriteFile(golden, []byte("kept\n"), 0o644))
				os.Remove(html)
				os.Remove(svg)
				continue
			}
			require.Equal(t, exitInterrupted, code, "%s: stderr %s", name, stderr)
			if stderr == "\nhlomem "+args[0]+": interrupted while printing its output\n" {
				// The work was done (its files, whole, are in place) and
				// the signal cut the copy of its spooled standard output:
				// on a loaded machine printing can take a quarter of the
				// run. Said so; nothing else to check.
				t.Logf("%s: interrupted while printing (%d bytes printed)", name, len(stdout))
				require.NoError(t, os.WriteFile(golden, []byte("kept\n"), 0o644))
				os.Remove(html)
				os.Remove(svg)
				continue
			}
			require.Equal(t, "hlomem "+args[0]+": interrupted; nothing written\n", stderr, name)
			require.Empty(t, stdout, name)
			// interruptGrace bounds how long a stage may take to notice;
			// the slack is for a loaded machine.
			require.Less(t, took, interruptGrace+5*time.Second, name)
			t.Logf("%s: stopped %v after the signal", name, took.Round(time.Millisecond))
			for _, p := range []string{html, svg} {
				_, err := os.Stat(p)
				require.ErrorIs(t, err, os.ErrNotExist, "%s: %s written", name, p)
			}
			b, err := os.ReadFile(golden)
			require.NoError(t, err)
			require.Equal(t, "kept\n", string(b), "%s: the golden file was replaced", name)
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Len(t, entries, 4, "%s: a temporary file was left: %v", name, entries)
		}
	}
}

// blockingCommand is a command that never looks at its context, as a
// stage too long to poll would: Main must still return after an
// interrupt, within interruptGrace.
func blockingCommand(t *testing.T) (release func()) {
	t.Helper()
	ch := make(chan struct{})
	old := commands
	commands = append(commands[:len(commands):len(commands)], &command{name: "test-block", summary: "blocks until released", flags: func(_ *flagSet, e *env) func([]string) error {
		return func([]string) error {
			e.stdout.WriteString("partial output\n")
			<-ch
			return nil
		}
	}})
	t.Cleanup(func() { commands = old })
	var once sync.Once
	return func() { once.Do(func() { close(ch) }) }
}

// TestInterruptGrace: a command that ignores its context is left behind
// once interruptGrace has passed; Main returns 130 and drops its output.
func TestInterruptGrace(t *testing.T) {
	release := blockingCommand(t)
	defer release()
	old := interruptGrace
	interruptGrace = 200 * time.Millisecond
	defer func() { interruptGrace = old }()
	code, stdout, stderr, took := interruptMain(t, []string{"test-block"}, syscall.SIGINT, 0)
	require.Equal(t, exitInterrupted, code)
	require.Empty(t, stdout)
	require.Equal(t, "hlomem test-block: interrupted; nothing written\n", stderr)
	require.GreaterOrEqual(t, took, interruptGrace)
}

// TestInterruptTwice: a second signal exits at once, even while the
// command has not yet noticed the first.
func TestInterruptTwice(t *testing.T) {
	release := blockingCommand(t)
	defer release()
	old := interruptGrace
	interruptGrace = time.Hour
	defer func() { interruptGrace = old }()
	exited := make(chan int, 1)
	exit = func(code int) {
		exited <- code
		select {} // as os.Exit would, never return to the watcher
	}
	defer func() { exit = os.Exit }()
	started := make(chan struct{})
	var once sync.Once
	commandStarted = func() { once.Do(func() { close(started) }) }
	defer func() { commandStarted = nil }()
	var stderr syncBuffer
	go Main([]string{"test-block"}, strings.NewReader(""), &bytes.Buffer{}, &stderr)
	<-started
	guard := make(chan os.Signal, 4)
	signal.Notify(guard, syscall.SIGINT)
	defer signal.Stop(guard)
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGINT))
	select {
	case code := <-exited:
		t.Fatalf("exited (%d) on the first signal", code)
	case <-time.After(100 * time.Millisecond):
	}
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGINT))
	select {
	case code := <-exited:
		require.Equal(t, exitInterrupted, code)
	case <-time.After(time.Minute):
		t.Fatal("the second signal did not exit")
	}
	require.Equal(t, "hlomem: interrupted twice; exiting at once\n", stderr.String())
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader on
// different goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

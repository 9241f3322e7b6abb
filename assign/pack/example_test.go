package pack_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/hlomem/hlomem/assign/pack"
)

func ExamplePack() {
	p := &pack.Problem{Buffers: []pack.Buffer{
		{ID: "weights", Start: 0, End: 8, Size: 4},
		{ID: "act0", Start: 0, End: 3, Size: 2},
		{ID: "act1", Start: 2, End: 5, Size: 2},
		{ID: "act2", Start: 4, End: 8, Size: 2, Align: 2},
	}}
	sol, err := pack.Pack(context.Background(), p, pack.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := pack.Check(p, sol.Packing); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("height %d, lower bound %d, optimal %v\n", sol.Height(), sol.LowerBound(), sol.Optimal())
	for i, b := range p.Buffers {
		fmt.Printf("%-7s [%d,%d) at %d\n", b.ID, b.Start, b.End, sol.Offsets[i])
	}
	// Output:
	// height 8, lower bound 8, optimal true
	// weights [0,8) at 0
	// act0    [0,3) at 4
	// act1    [2,5) at 6
	// act2    [4,8) at 4
}

func ExampleReadCSV() {
	in := "id,lower,upper,size\na,0,4,4\nb,1,3,2\nc,3,6,2\nd,4,8,4\n"
	p, err := pack.ReadCSV(strings.NewReader(in), "small.csv")
	if err != nil {
		fmt.Println(err)
		return
	}
	sol, err := pack.Pack(context.Background(), p, pack.Options{Algorithm: "xla"})
	if err != nil {
		fmt.Println(err)
		return
	}
	pack.WriteCSV(os.Stdout, p, sol.Packing)
	// Output:
	// id,lower,upper,size,offset
	// a,0,4,4,0
	// b,1,3,2,4
	// c,3,6,2,4
	// d,4,8,4,0
}

func ExampleCheck() {
	p := &pack.Problem{Buffers: []pack.Buffer{
		{ID: "x", Start: 0, End: 4, Size: 8},
		{ID: "y", Start: 2, End: 6, Size: 8},
	}}
	fmt.Println(pack.Check(p, pack.Packing{Offsets: []int64{0, 4}}))
	// Output:
	// pack: invalid packing: buffers "x" (time [0,4), bytes [0,8)) and "y" (time [2,6), bytes [4,12)) overlap at time 2
}

package lazyre

import "testing"

func TestNew(t *testing.T) {
	re := New(`^a+$`)
	first, second := re(), re()
	if !first.MatchString("aaa") || first.MatchString("b") || first != second {
		t.Fatal("lazy regexp")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("an invalid expression must panic at first use")
		}
	}()
	New(`(`)()
}

package idforge

import (
	"fmt"
	"testing"
	"time"
)

// The fast reader of the JSON answer agrees with encoding/json wherever it answers,
// and leaves everything else to it.
func TestDecodeFlatAgreesWithEncodingJSON(t *testing.T) {
	for _, tc := range []struct {
		body string
		kind Kind
		fast bool // the fast reader answers
	}{
		{`{"kind":"snowflake","ids":["910499571847892992","18446744073709551615"]}`, KindSnowflake, true},
		{` { "kind" : "segment" , "tag" : "order" , "ids" : [ "1" , 2 ] } `, KindSegment, true},
		{`{"ids":["0"],"n":12}`, KindSnowflake, true},
		{`{"kind":"uuid7","ids":["019a0000-0000-7000-8000-000000000000"]}`, KindUUID7, true},
		{`{"ids":["01JD0000000000000000000000"],"kind":"ulid"}`, KindULID, true},
		{`{"ids":["18446744073709551616"]}`, KindSnowflake, false}, // too large: refused
		{`{"ids":["-1"]}`, KindSnowflake, false},
		{`{"ids":[1.5]}`, KindSnowflake, false},
		{`{"ids":[]}`, KindSnowflake, false},
		{`{"ids":["1"]`, KindSnowflake, false},
		{`{"ids":["1"]} x`, KindSnowflake, false},
		{`{"ids":["1",]}`, KindSnowflake, false},
		{`{"kind":"a\"b","ids":["1"]}`, KindSnowflake, false}, // an escape: encoding/json's
		{`{"ids":["1"],"ids":["2"]}`, KindSnowflake, false},   // encoding/json takes the last
		{`{"x":{"y":1},"ids":["1"]}`, KindSnowflake, false},
		{`{"ids":[5]}`, KindUUID7, false},
		{`{"ids":"1"}`, KindSnowflake, false},
		{`[]`, KindSnowflake, false},
		{``, KindSnowflake, false},
	} {
		fast, ok := decodeFlat([]byte(tc.body), tc.kind)
		slow, why := decodeIDs([]byte(tc.body), tc.kind)
		if ok != tc.fast {
			t.Errorf("%s: fast %v", tc.body, ok)
		}
		if ok && (why != "" || fmt.Sprint(fast) != fmt.Sprint(slow)) {
			t.Errorf("%s: fast %v, encoding/json %v %s", tc.body, fast, slow, why)
		}
	}
	if a, why := decodeIDs([]byte(`{"kind":"a\"b","ids":["7"]}`), KindSnowflake); why != "" || a.nums[0] != 7 {
		t.Errorf("escapes: %v %s", a, why)
	}
	if a, why := decodeIDs([]byte(`{"ids":["1"],"ids":["2"]}`), KindSnowflake); why != "" || a.nums[0] != 2 {
		t.Errorf("a repeated key: %v %s", a, why)
	}
	for _, body := range []string{`{"ids":["18446744073709551616"]}`, `{"ids":[]}`, `{"ids":[1.5]}`, `{"ids":["1"]} x`} {
		if _, why := decodeIDs([]byte(body), KindSnowflake); why == "" {
			t.Errorf("%s is taken", body)
		}
	}
}

// A refill hands its IDs to the callers already waiting, in the order they came,
// before the buffer keeps any; a caller it cannot serve is woken to try again.
func TestARefillHandsItsIDsToTheWaitingCallersFirst(t *testing.T) {
	b := newBuffer(KindSnowflake, "", 0)
	b.begin()
	waiters := []chan id{make(chan id, 1), make(chan id, 1), make(chan id, 1)}
	b.waiters = append(b.waiters, waiters...)
	finished := b.finished
	b.fill(answer{nums: []uint64{1, 2}}, time.Now())
	b.end()
	for i, want := range []uint64{1, 2} {
		select {
		case v := <-waiters[i]:
			if v.n != want {
				t.Fatalf("waiter %d got %d", i, v.n)
			}
		default:
			t.Fatalf("waiter %d got nothing", i)
		}
	}
	select {
	case v := <-waiters[2]:
		t.Fatalf("the third waiter got %d", v.n)
	case <-finished:
	}
	if b.size != 0 || len(b.waiters) != 0 || b.state != idle {
		t.Fatalf("size %d, %d waiters, state %d", b.size, len(b.waiters), b.state)
	}
	b.begin()
	b.fill(answer{nums: []uint64{3, 4}}, time.Now()) // nobody waits: the buffer keeps them
	b.end()
	if b.size != 2 || b.take().n != 3 {
		t.Fatal("the buffer keeps what no caller waits for")
	}
}

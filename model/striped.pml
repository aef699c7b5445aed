/* Striped stores: one tag over K stores. Store i of K hands out its own numbers m and
 * the node makes ID m * K + i of them (StripedSource::allocate), so two stores never
 * share an ID as long as no two have one place. Every node lists the stores in its own
 * configuration; a node given them in another order (a configuration mistake) would
 * put one store's numbers at another's place. SegmentStore::claim_place, called by
 * StoreGuard::check_locked, records each store's place at its first use and refuses
 * it anywhere else: at start (open_stores) a refusal stops the node; a store that did
 * not answer then is checked before its first range, and a refusal there leaves that
 * store unused. The fleet floor keeps one record per place (FleetFloor::record_name:
 * "0-2-TAG"), in the stores' own numbers, and refuses a number of a place taken
 * already. Property: no ID twice (ids.pml). What one store does when it goes back is
 * segments.pml's: each place has its own guard, marks and floor record.
 *
 * Configurations: (default) a fleet with a shared registry; -DSTATIC no fleet floor
 * (static: worker ids). In both, a store may not answer when a node starts. Guards,
 * removable with -D:
 *   NO_PLACE_CHECK  claim_place
 *   NO_ALL_PLACES   (STATIC) a node serves from the set once every place has been
 *                   confirmed by its store (StoreGuard::check_every_place_confirmed):
 *                   without it two nodes that list the stores in different orders, each
 *                   starting while the other's first store is down, record both stores
 *                   at place 0 */

#include "ids.pml"

#define N 2                 /* nodes */
#define K 2                 /* stores */
#define MAXM 2              /* each store hands out numbers 1..MAXM (a bound) */

#define NEW 0               /* a node's states */
#define UP 1
#define OUT 2               /* refused to start */
#define UNCHECKED 0         /* a list position's guard */
#define CHECKED 1
#define REFUSED 2

byte smax[K];               /* each store's max_id */
byte place[K];              /* the place recorded in each store, + 1 (0: none yet) */
bit  down[K];               /* a store that does not answer now */
bit  swapped[N];            /* node n lists the two stores the other way round */
byte st[N];
byte pos[N * K];            /* node n's guard at list position j */
bit  mistake;               /* one node is configured so (at most once) */
byte outages;
#ifndef STATIC
byte taken[K];              /* the fleet floor: numbers taken at each place (a bitmask) */
#endif

#define STORE(n, j) (swapped[n] -> 1 - (j) : (j))

/* SegmentStore::claim_place(j, K) on the store at list position j of node n. */
inline claim(n, j) {
  if
  :: place[STORE(n, j)] == 0 ->
     place[STORE(n, j)] = j + 1; pos[n * K + j] = CHECKED;
     printf("| node %d records place %d/%d in store %d (claim_place)\n", n, j, K, STORE(n, j))
  :: place[STORE(n, j)] == j + 1 -> pos[n * K + j] = CHECKED
  :: else ->
#ifdef NO_PLACE_CHECK
     pos[n * K + j] = CHECKED;
     printf("| node %d lists store %d at place %d/%d, though it is at %d/%d: not checked\n",
            n, STORE(n, j), j, K, place[STORE(n, j)] - 1, K)
#else
     pos[n * K + j] = REFUSED;
     printf("| node %d lists store %d at place %d/%d, but it is at %d/%d: refused\n",
            n, STORE(n, j), j, K, place[STORE(n, j)] - 1, K)
#endif
  fi
}

#if defined(STATIC) && !defined(NO_ALL_PLACES)
#define CONFIRMED(n) (pos[(n) * K] == CHECKED && pos[(n) * K + 1] == CHECKED)
#else
#define CONFIRMED(n) 1
#endif
#define USABLE(n, j) (CONFIRMED(n) && pos[(n) * K + (j)] == CHECKED && !down[STORE(n, j)] && \
                      smax[STORE(n, j)] < MAXM)

proctype node(byte n) {
  byte j;
end:
  do
  /* One node may be configured with the stores the other way round. */
  :: atomic { st[n] == NEW && !mistake -> mistake = 1; swapped[n] = 1;
       printf("| node %d is configured with the two stores the other way round\n", n)
     }
  /* open_stores: every store that answers is checked in list order; a wrong place
   * stops the node (InvalidArgument), a store that does not answer waits. */
  :: atomic { st[n] == NEW ->
       st[n] = UP; j = 0;
       do
       :: j < K && !down[STORE(n, j)] ->
          claim(n, j);
          if :: pos[n * K + j] == REFUSED -> st[n] = OUT; break :: else -> j++ fi
       :: j < K && down[STORE(n, j)] ->
          printf("| node %d starts while store %d does not answer\n", n, STORE(n, j)); j++
       :: j == K -> break
       od;
       if :: st[n] == OUT -> printf("| node %d refuses to start\n", n) :: else fi;
       j = 0
     }
  /* allocate_once on a store not checked yet: check() first. */
  :: atomic { st[n] == UP && ((pos[n * K] == UNCHECKED && !down[STORE(n, 0)]) ||
                              (pos[n * K + 1] == UNCHECKED && !down[STORE(n, 1)])) ->
       if
       :: pos[n * K] == UNCHECKED && !down[STORE(n, 0)] -> j = 0
       :: pos[n * K + 1] == UNCHECKED && !down[STORE(n, 1)] -> j = 1
       fi;
       claim(n, j); j = 0
     }
  /* StripedSource::allocate through the guard at position j: the store's next number
   * m, handed out as m * K + j. */
  :: atomic { st[n] == UP && (USABLE(n, 0) || USABLE(n, 1)) ->
       if :: USABLE(n, 0) -> j = 0 :: USABLE(n, 1) -> j = 1 fi;
       smax[STORE(n, j)]++;
#ifndef STATIC
       if
       :: (taken[j] >> smax[STORE(n, j)]) & 1 ->
          printf("| node %d gets %d from store %d; the fleet floor of place %d/%d has it: refused\n",
                 n, smax[STORE(n, j)], STORE(n, j), j, K)
       :: else ->
          taken[j] = taken[j] | (1 << smax[STORE(n, j)]);
#endif
          printf("| node %d gets %d from store %d and hands out %d (StripedSource::allocate)\n",
                 n, smax[STORE(n, j)], STORE(n, j), smax[STORE(n, j)] * K + j);
          HANDOUT(smax[STORE(n, j)] * K + j)
#ifndef STATIC
       fi
#endif
       ;
       j = 0
     }
  od
}

init {
  atomic { run node(0); run node(1) }
end:
  do
  /* A store stops answering for a while (at most twice in a run). */
  :: atomic { outages < 2 && !down[0] && !down[1] ->
       outages++;
       if :: down[0] = 1; printf("| store 0 does not answer\n")
          :: down[1] = 1; printf("| store 1 does not answer\n")
       fi
     }
  :: atomic { down[0] || down[1] ->
       down[0] = 0; down[1] = 0; printf("| the stores answer again\n")
     }
  od
}

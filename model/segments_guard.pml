/* The segment model's nodes (included by segments.pml): StoreGuard in front of the
 * store, its ServedMarks, and FleetFloor in the registry. */

/* SegmentStore::adopt_identity: applied only while the recorded identity is still
 * `expected`; max_id is raised to the floor, then moved by the margin. */
inline adopt(expected, adopted, floor, margin) {
  if
  :: rec == expected ->
     if
     :: exists -> maxid = MAX(maxid, floor) + margin;
#ifdef WITHIN_MARGIN
        top = MAX(top, maxid)
#endif
     :: else
     fi;
     rec = adopted
  :: else
  fi
}

/* StoreGuard::check -> verify_identity_locked, up to kAdoptAttempts rounds: a history
 * recorded as this one is verified; "new:X" is confirmed when this node knew no other
 * history of the place, or served none of the store's tags; otherwise the first node to
 * notice adopts the new history, moving every tag past max(store, its own served) by
 * the margin (a fresh store, no tags and nothing recorded, is recorded new, unmoved).
 * One step: the adopt is a compare-and-set on the identity read, so anything that
 * happens between the read and it is as if it happened before a retry. */
inline verify(n) {
  tries = 0;
  do
  :: tries == 3 -> break
  :: else ->
     tries++;
     k = ((rec == NEWF + cur) && (seen[n] == 0 || seen[n] == cur || !(exists && served[n] != 0)));
     if
     :: rec == cur || k ->
        seen[n] = cur; ver[n] = cur; vrec[n] = rec; break
     :: else ->
        if
        :: rec == 0 && !exists -> adopt(0, NEWF + cur, 0, 0)
        :: else -> adopt(rec, cur, served[n], MARGIN)
        fi
     fi
  od;
  k = 0; tries = 0
}

/* The node's numbers are handed out: to the fleet (one set) or, with -DSELF, checked
 * against what this node handed out before. */
#ifdef SELF
inline give(n) {
  assert(sf[n] < 32);
  if
  :: (mine_lo[n] >> sf[n]) & 1 ->
     printf("| REPEAT: node %d hands out %d a second time\n", n, sf[n]);
     assert(false)
  :: else -> mine_lo[n] = mine_lo[n] | (1 << sf[n])
  fi
}
#else
#define give(n) HANDOUT(sf[n])
#endif

/* FleetFloor::take -> FloorState::take on the record (ff, fa..fb): a range at or below
 * the floor or overlapping the range above is refused (k = 0, hi = the highest taken);
 * else it is added, a range touching the floor folds into it, and with two ranges
 * above the lower one folds in, gap and all (kMaxRangesAbove). */
inline floor_take(F, A, B, f, l) {
  hi = (A != 0 -> B : F);
  if
  :: f <= F || (A != 0 && !(l < A || f > B)) -> k = 0
  :: else ->
     k = 1;
     if
     :: A == 0 -> x1 = f; y1 = l; x2 = 0; y2 = 0
     :: A != 0 && l < A -> x1 = f; y1 = l; x2 = A; y2 = B
     :: else -> x1 = A; y1 = B; x2 = f; y2 = l
     fi;
     if
     :: x2 != 0 && y1 + 1 == x2 -> y1 = y2; x2 = 0; y2 = 0
     :: else
     fi;
     if
     :: x1 == F + 1 || x2 != 0 -> F = y1; x1 = x2; y1 = y2; x2 = 0; y2 = 0
     :: else
     fi;
     if
     :: x1 == F + 1 -> F = y1; x1 = 0; y1 = 0
     :: else
     fi;
     A = x1; B = y1; x1 = 0; y1 = 0
  fi
}

/* The range passed every check: ServedMarks::record (durable), then handed out. */
inline use(n) {
  served[n] = MAX(served[n], LAST(n));
  printf("| node %d hands out %d (ServedMarks::record, then the buffer)\n", n, sf[n]);
  give(n);
  sf[n] = 0; ph[n] = IDLE
}

/* The two checks of allocate_once before the fleet floor. */
#ifdef NO_IDENTITY_CHECK
#define ID_BAD(n) false
#else
#define ID_BAD(n) (cur != ver[n])
#endif
#ifdef NO_SERVED_MARKS
#define SERVED_BAD(n) false
#else
#define SERVED_BAD(n) (!ID_BAD(n) && sf[n] <= served[n])
#endif

proctype node(byte n) {
end:
  do
  /* The store prober (SegmentPart, every 2 s) or allocate_once calling check(). */
  :: atomic { ver[n] == 0 || ver[n] != cur || rec != vrec[n] ->
       verify(n);
       if
       :: vrec[n] > NEWF ->
          printf("| node %d checks the store: history %d verified, recorded as new:%d (check)\n",
                 n, ver[n], vrec[n] - NEWF)
       :: else ->
          printf("| node %d checks the store: history %d verified (check)\n", n, ver[n])
       fi
     }
  /* StoreGuard::allocate_once: SegmentStore::allocate (one statement: max_id moves up
   * by the step, the range and its history returned), then the history check and the
   * node's own marks. */
  :: atomic { ph[n] == IDLE && ver[n] != 0 && exists && maxid + STEP <= MAXN ->
       maxid = maxid + STEP; sf[n] = maxid - STEP + 1;
#ifdef WITHIN_MARGIN
       top = MAX(top, maxid);
#endif
       printf("| node %d gets %d from the store (history %d; SegmentStore::allocate)\n",
              n, sf[n], cur);
       if
       :: ID_BAD(n) ->
          printf("| node %d skips it: committed under history %d, not the verified %d\n",
                 n, cur, ver[n]);
          ver[n] = 0; sf[n] = 0
       :: SERVED_BAD(n) ->
          printf("| node %d refuses it: it served up to %d (ServedMarks::highest)\n",
                 n, served[n]);
          rfl[n] = served[n]; ph[n] = RAISE
       :: else ->
#ifdef NOFLOOR
          use(n)
#else
          ph[n] = GOT
#endif
       fi
     }
#ifndef NOFLOOR
  /* FleetFloor::take: the range recorded in the registry before use, one
   * compare-and-set; a refusal raises the tag past the fleet's highest. */
#ifndef NO_FLOOR_CAS
  :: atomic { ph[n] == GOT ->
       floor_take(ff, fa, fb, sf[n], LAST(n));
#else
  :: atomic { ph[n] == GOT ->
       rff[n] = ff; rfa[n] = fa; rfb[n] = fb; ph[n] = TAKE;
       printf("| node %d reads the fleet floor: floor %d, above %d-%d\n", n, ff, fa, fb)
     }
  :: atomic { ph[n] == TAKE ->
       floor_take(rff[n], rfa[n], rfb[n], sf[n], LAST(n));
       if :: k -> ff = rff[n]; fa = rfa[n]; fb = rfb[n] :: else fi;
       rff[n] = 0; rfa[n] = 0; rfb[n] = 0;
#endif
       if
       :: k ->
          printf("| node %d records %d in the fleet floor: floor %d, above %d-%d (FleetFloor::take)\n",
                 n, sf[n], ff, fa, fb);
          k = 0; hi = 0;
          use(n)
       :: else ->
          printf("| node %d: the fleet floor refuses %d, the fleet took up to %d\n", n, sf[n], hi);
          rfl[n] = MAX(hi, served[n]); ph[n] = RAISE; hi = 0
       fi
     }
#endif
  /* StoreGuard::raise_tag: check() again, then adopt_identity with the verified record
   * expected and the tag's floor: max_id only ever rises. */
  :: atomic { ph[n] == RAISE ->
       ver[n] = 0; verify(n);
       if
       :: ver[n] != 0 -> adopt(vrec[n], vrec[n], rfl[n], 0)
       :: else
       fi;
       printf("| node %d raises the tag to %d (raise_tag); the store is at %d\n", n, rfl[n], maxid);
       rfl[n] = 0; sf[n] = 0; ph[n] = IDLE
     }
  /* SIGKILL: what is in memory goes, the served marks stay. */
  :: atomic { FAULT(CRASH) ->
       faults++; ver[n] = 0; vrec[n] = 0; sf[n] = 0; rfl[n] = 0; ph[n] = IDLE;
#ifdef NO_FLOOR_CAS
       rff[n] = 0; rfa[n] = 0; rfb[n] = 0;
#endif
       printf("| node %d crashes and restarts\n", n)
     }
  od
}

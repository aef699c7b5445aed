/* The set of IDs handed out so far, shared by the models: 64 small numbers in two
 * 32-bit words, and the one property every model checks: no number is handed out
 * twice. HANDOUT(x) is called at the moment the C++ returns an ID (or a range) to a
 * caller; it fails the run, with the number, when x was handed out before. */

int used_lo;   /* numbers 0..31 */
int used_hi;   /* numbers 32..63 */

#define USED(x) (((x) < 32 -> (used_lo >> (x)) & 1 : (used_hi >> ((x) - 32)) & 1) == 1)

inline HANDOUT(x) {
  assert((x) < 64);                  /* the bounds below keep every number under 64 */
  if
  :: USED(x) ->
     printf("| REPEAT: %d is handed out a second time\n", x);
     assert(!USED(x))
  :: else
  fi;
  if
  :: (x) < 32 -> used_lo = used_lo | (1 << (x))
  :: else -> used_hi = used_hi | (1 << ((x) - 32))
  fi
}

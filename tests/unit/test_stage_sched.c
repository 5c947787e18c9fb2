/* SPDX-License-Identifier: BSD-2-Clause */
/* Cutting staged transfers into copies: pieces on the chunk grid, within
 * one iovec entry, never past what is ready. */
#include <criterion/criterion.h>

#include "gdrfab_stage.h"

/* Cuts [0, limit) and checks every piece; returns the piece count. */
static size_t cut(const struct iovec *iov, size_t count, size_t limit,
		  size_t chunk)
{
	size_t idx = 0, ioff = 0, off = 0, pieces = 0, n;

	while ((n = gdrfab_stage_next_piece(iov, count, &idx, &ioff, off, limit,
					    chunk))) {
		cr_assert_leq(n, chunk);
		cr_assert_eq(off / chunk, (off + n - 1) / chunk,
			     "piece [%zu, %zu) crosses a chunk boundary", off,
			     off + n);
		cr_assert_lt(idx, count);
		cr_assert_leq(ioff, iov[idx].iov_len, "inside its entry");
		off += n;
		pieces++;
		cr_assert_lt(pieces, 100000, "no end");
	}
	cr_assert_eq(off, limit, "cut all of it");
	return pieces;
}

Test(stage_sched, one_buffer_around_the_chunk)
{
	const size_t c = 4096;
	struct {
		size_t len, pieces;
	} cases[] = {
		{0, 0},		  {1, 1},
		{c - 1, 1},	  {c, 1},
		{c + 1, 2},	  {16 * c, 16},
		{17 * c + 3, 18}, {(64 << 20), (64 << 20) / c},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct iovec iov = {.iov_base = (void *)0x1000,
				    .iov_len = cases[i].len};

		cr_assert_eq(cut(&iov, 1, cases[i].len, c), cases[i].pieces,
			     "%zu bytes", cases[i].len);
	}
}

Test(stage_sched, entries_split_pieces_and_empty_ones_are_skipped)
{
	struct iovec iov[4] = {{(void *)0x1000, 100},
			       {(void *)0x9000, 0},
			       {(void *)0x5000, 250},
			       {(void *)0x7000, 50}};
	size_t idx = 0, ioff = 0;

	/* chunk 128: [0,100) in entry 0; [100,128) [128,256) [256,350) in
	 * entry 2; [350,384) [384,400) in entry 3. */
	cr_assert_eq(cut(iov, 4, 400, 128), 6);
	cr_assert_eq(gdrfab_stage_next_piece(iov, 4, &idx, &ioff, 0, 400, 128),
		     100);
	cr_assert_eq(
		gdrfab_stage_next_piece(iov, 4, &idx, &ioff, 100, 400, 128),
		28);
	cr_assert_eq(idx, 2, "the empty entry was skipped");
	cr_assert_eq(ioff, 28);
}

Test(stage_sched, stops_at_what_is_ready)
{
	struct iovec iov = {.iov_base = (void *)0x1000, .iov_len = 10000};
	size_t idx = 0, ioff = 0;

	/* Only 5000 bytes landed: pieces stop there, then go on. */
	cr_assert_eq(
		gdrfab_stage_next_piece(&iov, 1, &idx, &ioff, 0, 5000, 4096),
		4096);
	cr_assert_eq(
		gdrfab_stage_next_piece(&iov, 1, &idx, &ioff, 4096, 5000, 4096),
		904);
	cr_assert_eq(
		gdrfab_stage_next_piece(&iov, 1, &idx, &ioff, 5000, 5000, 4096),
		0, "nothing past the ready bytes");
	cr_assert_eq(gdrfab_stage_next_piece(&iov, 1, &idx, &ioff, 5000, 10000,
					     4096),
		     3192, "up to the next chunk boundary");
	cr_assert_eq(gdrfab_stage_next_piece(&iov, 1, &idx, &ioff, 8192, 10000,
					     4096),
		     1808);
	cr_assert_eq(gdrfab_stage_next_piece(&iov, 1, &idx, &ioff, 10000, 10000,
					     4096),
		     0);
}

/* The grid grows from one chunk to GDRFAB_STAGE_GROW once as many bytes
 * went before, and divides every offset it is asked at. */
Test(stage_sched, pieces_grow_to_four_chunks_on_the_chunk_grid)
{
	const size_t c = 1 << 20;
	size_t off = 0, sizes[16], n = 0;

	cr_assert_eq(gdrfab_stage_piece_grid(0, c), c);
	cr_assert_eq(gdrfab_stage_piece_grid(c, c), c);
	cr_assert_eq(gdrfab_stage_piece_grid(2 * c, c), 2 * c);
	cr_assert_eq(gdrfab_stage_piece_grid(4 * c, c), 4 * c);
	cr_assert_eq(gdrfab_stage_piece_grid(64 * c, c), 4 * c);
	/* 20 chunks, one iovec entry: 1, 1, 2, 4, 4, 4, 4 chunks. */
	{
		struct iovec iov = {.iov_base = NULL, .iov_len = 20 * c};
		size_t idx = 0, ioff = 0, len;

		while ((len = gdrfab_stage_next_piece(
				&iov, 1, &idx, &ioff, off, 20 * c,
				gdrfab_stage_piece_grid(off, c)))) {
			cr_assert_eq(off % c, 0, "on the chunk grid");
			sizes[n++] = len / c;
			off += len;
		}
	}
	cr_assert_eq(off, 20 * c);
	cr_assert_eq(n, 7);
	cr_assert_arr_eq(sizes, ((size_t[]){1, 1, 2, 4, 4, 4, 4}),
			 7 * sizeof(size_t));
	/* What landed so far bounds a piece; the next starts off the grid
	 * and ends on it. */
	{
		struct iovec iov = {.iov_base = NULL, .iov_len = 20 * c};
		size_t idx = 0, ioff = 4 * c;

		cr_assert_eq(gdrfab_stage_next_piece(
				     &iov, 1, &idx, &ioff, 4 * c, 5 * c + 10,
				     gdrfab_stage_piece_grid(4 * c, c)),
			     c + 10);
		cr_assert_eq(gdrfab_stage_next_piece(
				     &iov, 1, &idx, &ioff, 5 * c + 10, 20 * c,
				     gdrfab_stage_piece_grid(5 * c + 10, c)),
			     3 * c - 10);
	}
}

import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { isShared, jsonParts, viewMemo } from '../../src/core/view-memo.js';
import { redact, sensitive } from '../../src/core/redact.js';

interface Row {
  uuid: string;
  name: string;
  config: string;
}
interface Where {
  server_uuid: string;
}
const where = (server_uuid = 's1'): Where => ({ server_uuid });
const row = (over: Partial<Row> = {}): Row => ({ uuid: 'u1', name: 'one', config: '{"secret":"k"}', ...over });

function counted() {
  let builds = 0;
  const memo = viewMemo(
    (r: Row, w: Where) => {
      builds++;
      return { uuid: r.uuid, name: r.name, server_uuid: w.server_uuid, tags: ['a'], secret: (JSON.parse(r.config) as { secret: string }).secret };
    },
    (r) => r.uuid,
    3,
  );
  return { memo, builds: () => builds };
}

describe('view memo (lists of unchanged rows)', () => {
  it('reuses the view of an equal row and placement, and builds again when any column or placement uuid differs', () => {
    const { memo, builds } = counted();
    const first = memo(row(), where());
    // A new row object read again with the same values: the same view, not built again.
    expect(memo(row(), where())).toBe(first);
    expect(builds()).toBe(1);
    const renamed = memo(row({ name: 'two' }), where());
    expect(renamed).not.toBe(first);
    expect(renamed.name).toBe('two');
    expect(memo(row({ name: 'two', config: '{"secret":"changed"}' }), where()).secret).toBe('changed');
    expect(memo(row({ name: 'two', config: '{"secret":"changed"}' }), where('s2')).server_uuid).toBe('s2');
    expect(builds()).toBe(4);
  });

  it('freezes the shared view and its arrays, so no answer can change another', () => {
    const { memo } = counted();
    const view = memo(row(), where());
    expect(isShared(view)).toBe(true);
    expect(() => {
      (view as { name: string }).name = 'x';
    }).toThrow(TypeError);
    expect(() => view.tags.push('b')).toThrow(TypeError);
  });

  it('keeps at most max entries, the oldest built leaving first', () => {
    const { memo, builds } = counted();
    for (const uuid of ['a', 'b', 'c', 'd']) memo(row({ uuid }), where());
    memo(row({ uuid: 'd' }), where());
    expect(builds()).toBe(4);
    memo(row({ uuid: 'a' }), where());
    expect(builds()).toBe(5);
  });

  it('answers JSON bytes from the second writing on, equal to JSON.stringify; anything else is stringified by the caller', () => {
    const { memo } = counted();
    const views = [memo(row({ uuid: 'x1' }), where()), memo(row({ uuid: 'x2', name: 'é "quoted"' }), where())];
    expect(jsonParts(views)).toBeUndefined();
    const second = jsonParts(views);
    expect(second?.map((b) => b.toString('utf8'))).toEqual(views.map((v) => JSON.stringify(v)));
    // The kept bytes themselves the third time.
    expect(jsonParts(views)?.[1]).toBe(second?.[1]);
    // One item that is not a memo's view: the whole slice is the caller's to stringify.
    expect(jsonParts([...views, { uuid: 'plain' }])).toBeUndefined();
  });

  it("redacts a shared view once: the copy is reused, shared, and leaves out the sensitive field; others' copies are made anew", () => {
    const schema = z.object({ uuid: z.string(), name: z.string(), server_uuid: z.string(), tags: z.array(z.string()), secret: sensitive(z.string()) });
    const { memo } = counted();
    const view = memo(row(), where());
    const copy = redact(schema, view);
    expect(copy).toEqual({ uuid: 'u1', name: 'one', server_uuid: 's1', tags: ['a'] });
    expect(redact(schema, view)).toBe(copy);
    expect(isShared(copy)).toBe(true);
    // A changed row's view gets its own copy, with the change.
    expect(redact(schema, memo(row({ name: 'new' }), where()))).toMatchObject({ name: 'new' });
    const plain = { ...view };
    expect(redact(schema, plain)).not.toBe(redact(schema, plain));
    expect(redact(schema, plain)).toEqual(copy);
  });
});

// A virtualised list (@tanstack/virtual-core): only the rows in view (and a few either side)
// are in the document, so thousands of live events scroll as smoothly as ten. The list box is
// focusable, so arrow keys and Page Up/Down scroll it; its rows' links are in the tab order.
import {
  Virtualizer,
  elementScroll,
  observeElementOffset,
  observeElementRect,
} from "virtual-core";
import { html, useEffect, useRef, useState } from "./lib.js";

export function VirtualList({ count, rowHeight, renderRow, rowKey, label, height = 560 }) {
  const scroller = useRef(null);
  const [, rerender] = useState(0);
  const virtualizer = useRef(null);
  const options = {
    count,
    getScrollElement: () => scroller.current,
    estimateSize: () => rowHeight,
    getItemKey: rowKey,
    scrollToFn: elementScroll,
    observeElementRect,
    observeElementOffset,
    overscan: 8,
    initialRect: { width: 800, height },
    onChange: () => rerender((n) => n + 1),
  };
  if (virtualizer.current === null) virtualizer.current = new Virtualizer(options);
  const v = virtualizer.current;
  v.setOptions(options);
  useEffect(() => v._didMount(), []);
  useEffect(() => {
    v._willUpdate();
  });
  return html`
    <div class="vlist" ref=${scroller} tabindex="0" role="region" aria-label=${label}
         style=${{ height: `${height}px` }}>
      <ol class="vlist-inner" style=${{ height: `${v.getTotalSize()}px` }} aria-label=${label}>
        ${v.getVirtualItems().map(
          (item) => html`
          <li key=${item.key} class="vrow" aria-setsize=${count} aria-posinset=${item.index + 1}
              style=${{ transform: `translateY(${item.start}px)`, height: `${rowHeight}px` }}>
            ${renderRow(item.index)}
          </li>`,
        )}
      </ol>
    </div>`;
}

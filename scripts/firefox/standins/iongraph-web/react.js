// Stand-in for iongraph-web 0.2.1, which is not on the npm registry. The Firefox Profiler uses it only to draw
// SpiderMonkey IonMonkey graphs, which profkit's profiles do not carry.
import { createElement } from 'react';
export function migrate(json) {
  return json;
}
export function GraphViewerReact() {
  return createElement('div', null, 'IonGraph view is not available in this build');
}

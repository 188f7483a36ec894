// zaris as an ES module (the same instance as `require('zaris')`).
import zaris from './index.cjs';

export const {
  generate,
  generateMulti,
  generateBatch,
  slotForBytes,
  slotForUtf16,
  slotsForUtf8Lines,
  slotsForUtf16Lines,
  hashTagSpanBytes,
  hashTagSpanUtf16,
  segmentForSlot,
  segmentsForSlots,
  routeCommand,
  simulateRetries,
  ClusterMap,
  KeyBatch,
  KeyScratch,
} = zaris;
export default zaris;
